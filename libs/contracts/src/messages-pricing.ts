import type { PriceTable } from './pricing';

/**
 * Token pricing of the messages protocol. Prices are per million tokens (the price table holds them in minor
 * units per million: `<model>@input`, `@output`, `@cache_write`, `@cache_read`), so a charge is
 * ceil(Σ tokens × unit / 1,000,000) minor units, times the group ratio.
 */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheWriteTokens: number;
  cacheReadTokens: number;
}

export const TOKEN_KINDS = ['input', 'output', 'cache_write', 'cache_read'] as const;
export type TokenKind = (typeof TOKEN_KINDS)[number];

export type TokenPrices = Readonly<Record<TokenKind, bigint>>;

export const tokenPriceKey = (model: string, kind: TokenKind): string => `${model}@${kind}`;

/** The model's four token prices, or the keys missing from the table. */
export function tokenPricesOf(model: string, table: PriceTable): { prices: TokenPrices } | { missing: string[] } {
  const missing = TOKEN_KINDS.map((k) => tokenPriceKey(model, k)).filter((key) => !table.has(key));
  if (missing.length > 0) return { missing };
  const get = (k: TokenKind) => table.get(tokenPriceKey(model, k))!;
  return { prices: { input: get('input'), output: get('output'), cache_write: get('cache_write'), cache_read: get('cache_read') } };
}

const PER_MILLION = 1_000_000n;
const whole = (n: number): bigint => BigInt(Math.max(0, Math.ceil(Number.isFinite(n) ? n : 0)));

/** Pure, monotone in every token count (so a hold computed from upper bounds covers the actual cost). */
export function tokenCost(u: TokenUsage, p: TokenPrices, ratio = 1): bigint {
  const micro =
    whole(u.inputTokens) * p.input + whole(u.outputTokens) * p.output + whole(u.cacheWriteTokens) * p.cache_write + whole(u.cacheReadTokens) * p.cache_read;
  const base = (micro + PER_MILLION - 1n) / PER_MILLION;
  return ratio === 1 ? base : BigInt(Math.ceil(Number(base) * ratio));
}

/**
 * The most a request can cost: every input token priced at the dearer of input and cache-write, plus
 * `maxTokens` of output. `inputUpperBound` must not be below what the upstream will count.
 */
export function tokenHold(inputUpperBound: number, maxTokens: number, p: TokenPrices, ratio = 1): bigint {
  const dearer = p.cache_write > p.input ? p.cache_write : p.input;
  return tokenCost({ inputTokens: inputUpperBound, outputTokens: maxTokens, cacheWriteTokens: 0, cacheReadTokens: 0 }, { ...p, input: dearer }, ratio);
}
