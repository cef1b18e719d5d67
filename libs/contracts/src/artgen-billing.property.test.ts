import fc from 'fast-check';
import { ARTGEN_ACTIONS, artgenBillingItem } from './artgen-billing';
import { quote, type PriceTable } from './pricing';

/**
 * Property (spec 8): for any (action, version, speed, alternate-style, batch) the charge uses the most specific
 * priced key of `artgen@<action>-<version>-<speed>` → `artgen@<action>-<version>` → `artgen@<action>-<speed>` →
 * `artgen@<action>` → `artgen`, times the quantity (batch_size for video). The expectation is computed here from
 * the spec's rules, independently of artgenBillingItem.
 */

// raw version as a client sends it → [normalized without alt style, with alt style] (spec 8; the alternate style
// applies to the major versions 7 and 6, so 6.1 with it is altstyle6)
const VERSIONS: Record<string, [string | undefined, string | undefined]> = {
  '8.2': ['v8.2', 'v8.2'],
  v8: [undefined, undefined],
  'v8.1': ['v8.1', 'v8.1'],
  '7': ['v7', 'altstyle7'],
  'V7.0': ['v7', 'altstyle7'],
  '6.1': ['v6.1', 'altstyle6'],
  '6': [undefined, 'altstyle6'],
  '5.2': ['v5.2', 'v5.2'],
  'v5.1': ['v5.1', 'v5.1'],
  '4': [undefined, undefined],
};
const SPEEDS: Record<string, string | undefined> = { fast: 'fast', turbo: 'turbo', relax: undefined, FAST: 'fast' };

const pathForm = (a: string) => (a === 'video-720p' ? a : a.replace(/_/g, '-'));

describe('art suite billing key chain (property)', () => {
  it('charges the most specific priced key times the quantity', () => {
    const input = fc.record({
      action: fc.constantFrom(...ARTGEN_ACTIONS),
      asPath: fc.boolean(),
      version: fc.option(fc.constantFrom(...Object.keys(VERSIONS)), { nil: undefined }),
      speed: fc.option(fc.constantFrom(...Object.keys(SPEEDS)), { nil: undefined }),
      altStyle: fc.boolean(),
      batch: fc.integer({ min: 1, max: 4 }),
    });
    fc.assert(
      fc.property(input, fc.infiniteStream(fc.boolean()), fc.integer({ min: 1, max: 5_000_000 }), (inp, coin, basePrice) => {
        const v = inp.version === undefined ? undefined : VERSIONS[inp.version]![inp.altStyle ? 1 : 0];
        const s = inp.speed === undefined ? undefined : SPEEDS[inp.speed];
        const a = inp.action;
        const chain = [
          v && s ? `artgen@${a}-${v}-${s}` : undefined,
          v ? `artgen@${a}-${v}` : undefined,
          s ? `artgen@${a}-${s}` : undefined,
          `artgen@${a}`,
          'artgen',
        ].filter((k): k is string => k !== undefined);
        // a random subset of the chain is priced (always `artgen`), plus noise keys of other actions
        const table = new Map<string, bigint>([['artgen', BigInt(basePrice)]]);
        const it = coin[Symbol.iterator]();
        chain.forEach((k, i) => {
          if (it.next().value) table.set(k, BigInt(basePrice + i + 1));
        });
        table.set(`artgen@${a === 'imagine' ? 'blend' : 'imagine'}-v8.2-fast`, 1n);
        const expectedKey = chain.find((k) => table.has(k))!;
        const quantity = a === 'video' || a === 'video-720p' ? inp.batch : 1;

        const item = artgenBillingItem({
          action: inp.asPath ? pathForm(a) : a,
          version: inp.version,
          speed: inp.speed,
          altStyle: inp.altStyle,
          batchSize: inp.batch,
        });
        const q = quote([item], table as PriceTable);
        expect(q.lines[0]!.key).toBe(expectedKey);
        expect(q.total).toBe(table.get(expectedKey)! * BigInt(quantity));
      }),
      { numRuns: 1000, seed: 8 },
    );
  });
});
