import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listModels } from './models/registry';
import { toMinor } from './pricing';
import { tokenCost, tokenHold, tokenPricesOf, type TokenPrices } from './messages-pricing';

const P: TokenPrices = { input: 3_000_000n, output: 15_000_000n, cache_write: 3_750_000n, cache_read: 300_000n };

describe('tokenCost', () => {
  it('charges per million tokens, rounding a fraction of a minor unit up', () => {
    // 1000 input tokens at 3,000,000 minor units per million = 3000; 10 output at 15,000,000 = 150
    expect(tokenCost({ inputTokens: 1000, outputTokens: 10, cacheWriteTokens: 0, cacheReadTokens: 0 }, P)).toBe(3000n + 150n);
    expect(tokenCost({ inputTokens: 1, outputTokens: 0, cacheWriteTokens: 0, cacheReadTokens: 1 }, P)).toBe(4n); // 3 + 0.3 → 4
    expect(tokenCost({ inputTokens: 0, outputTokens: 0, cacheWriteTokens: 0, cacheReadTokens: 0 }, P)).toBe(0n);
  });

  it('applies the group ratio', () => {
    expect(tokenCost({ inputTokens: 1000, outputTokens: 0, cacheWriteTokens: 0, cacheReadTokens: 0 }, P, 0.5)).toBe(1500n);
  });

  it('the hold covers any usage within its bounds (input possibly all cache writes)', () => {
    fc.assert(
      fc.property(fc.nat(200_000), fc.nat(64_000), fc.nat(100), fc.nat(100), (input, max, writePct, readPct) => {
        const hold = tokenHold(input, max, P, 1.3);
        const writes = Math.floor((input * writePct) / 100);
        const reads = Math.floor(((input - writes) * readPct) / 100);
        const out = Math.floor(max / 2);
        const used = tokenCost({ inputTokens: input - writes - reads, outputTokens: out, cacheWriteTokens: writes, cacheReadTokens: reads }, P, 1.3);
        return used <= hold;
      }),
    );
  });
});

describe('tokenPricesOf', () => {
  it('names every missing key', () => {
    const table = new Map([
      ['m@input', 1n],
      ['m@output', 2n],
    ]);
    expect(tokenPricesOf('m', table)).toEqual({ missing: ['m@cache_write', 'm@cache_read'] });
    expect(tokenPricesOf('m', new Map([...table, ['m@cache_write', 3n], ['m@cache_read', 4n]]))).toEqual({
      prices: { input: 1n, output: 2n, cache_write: 3n, cache_read: 4n },
    });
  });
});

describe('infra/prices.json prices every model of the messages endpoint', () => {
  const rows = JSON.parse(readFileSync(join(__dirname, '../../../infra/prices.json'), 'utf8')) as Array<{ key: string; price: number }>;
  const table = new Map(rows.map((r) => [r.key, toMinor(r.price)]));
  const chat = listModels().filter((m) => m.supportedEndpointTypes.includes('messages'));

  it.each(chat.map((m) => [m.id]))('%s has its four token prices', (id) => {
    expect(tokenPricesOf(id, table)).toHaveProperty('prices');
  });
  it('there are chat models', () => expect(chat.length).toBeGreaterThan(0));
});
