import type { BillingItem } from './models/types';

/**
 * Money is integer minor units everywhere inside: 1 currency unit = 1,000,000 minor units (micro-units),
 * so per-second video prices stay integers. The API shows money as a decimal number of currency units.
 */
export const toMinor = (units: number): bigint => BigInt(Math.round(units * 1_000_000));
export const fromMinor = (minor: bigint | string | number): number => Number(BigInt(minor)) / 1_000_000;

/** price key -> unit price in minor units */
export type PriceTable = ReadonlyMap<string, bigint>;

export interface QuoteLine {
  key: string;
  unitPrice: string;
  quantity: number;
  amount: string;
  label: string;
}
export interface Quote {
  /** Total in minor units, after the group ratio. */
  total: bigint;
  ratio: number;
  lines: QuoteLine[];
}

export class PriceNotFoundError extends Error {
  constructor(readonly keys: string[]) {
    super(`no price for any of: ${keys.join(', ')}`);
    this.name = 'PriceNotFoundError';
  }
}

/** Pure: the price of a request from its billing items, a price table and the group's ratio. */
export function quote(items: readonly BillingItem[], prices: PriceTable, ratio = 1): Quote {
  const lines: QuoteLine[] = [];
  let subtotal = 0n;
  for (const item of items) {
    const key = item.keys.find((k) => prices.has(k));
    if (key === undefined) throw new PriceNotFoundError(item.keys);
    const unit = prices.get(key)!;
    // quantity may be fractional (never in practice); round half up in minor units
    const amount = BigInt(Math.round(Number(unit) * item.quantity));
    subtotal += amount;
    lines.push({ key, unitPrice: unit.toString(), quantity: item.quantity, amount: amount.toString(), label: item.label });
  }
  const total = ratio === 1 ? subtotal : BigInt(Math.round(Number(subtotal) * ratio));
  return { total, ratio, lines };
}
