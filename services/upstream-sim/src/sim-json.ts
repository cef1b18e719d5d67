/** A request body's JSON object, whose shape the simulator checks as its vendor would. */
export type Json = Record<string, unknown>;
export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
