import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listModels } from './registry';
import type { BuiltContract } from './define-contract';
import { bodyArbitrary } from './contract-arbitraries.test-kit';
import { quote, toMinor, type PriceTable } from '../pricing';
import { ARTGEN_ACTIONS, artgenBillingItem } from '../artgen-billing';

const rows = JSON.parse(readFileSync(join(__dirname, '../../../../infra/prices.json'), 'utf8')) as Array<{ key: string; price: number; description: string }>;
const prices: PriceTable = new Map(rows.map((r) => [r.key, toMinor(r.price)]));

describe('infra/prices.json covers every billing item', () => {
  it('has unique keys, positive prices and descriptions', () => {
    expect(new Set(rows.map((r) => r.key)).size).toBe(rows.length);
    for (const r of rows) {
      expect(r.price).toBeGreaterThan(0);
      expect(r.description.length).toBeGreaterThan(5);
    }
  });

  it.each(
    listModels()
      .filter((m) => m.contract)
      .map((m) => [m.id, m] as const),
  )('%s: valid bodies quote with their most specific key', (_id, m) => {
    const c = m.contract as BuiltContract;
    let quoted = 0;
    fc.assert(
      fc.property(bodyArbitrary(c, [m.id, ...m.aliases], true), (body) => {
        const r = c.validate(body, String(body.model));
        if (!r.ok) return;
        quoted++;
        for (const item of r.value.billing) expect(prices.has(item.keys[0]!)).toBe(true);
        expect(quote(r.value.billing, prices).total).toBeGreaterThan(0n);
      }),
      { numRuns: 200, seed: 7 },
    );
    expect(quoted).toBeGreaterThan(10);
  });

  it.each(ARTGEN_ACTIONS.map((a) => [a]))('art suite %s quotes with any version and speed', (action) => {
    for (const version of [undefined, '8.2', '7', '6']) {
      for (const speed of [undefined, 'relax', 'fast', 'turbo']) {
        expect(() => quote([artgenBillingItem({ action, version, speed, altStyle: version === '6', batchSize: 4 })], prices)).not.toThrow();
      }
    }
  });
});
