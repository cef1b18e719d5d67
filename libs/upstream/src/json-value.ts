/** Reading a vendor's JSON answer, whose shape is never trusted: the checks every adapter makes. */
export type Json = Record<string, unknown>;

export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A non-empty string, else undefined. */
export const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

/** A JSON object kept as a string (an upstream id the gateway encoded itself); anything else reads as `{}`. */
export function parseJsonObject(s: string): Json {
  try {
    const v = JSON.parse(s) as unknown;
    return isObj(v) ? v : {};
  } catch {
    return {};
  }
}

/** A vendor's `WxH` size string as pixels; anything else is undefined. */
export const sizeOfWxH = (v: unknown): { width: number; height: number } | undefined => {
  const m = typeof v === 'string' ? /^(\d{1,5})x(\d{1,5})$/.exec(v) : null;
  return m ? { width: Number(m[1]), height: Number(m[2]) } : undefined;
};
