import { createHash, randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Random bytes drawn from a pool refilled 4 KiB at a time (one getrandom call per ~80 ids instead of one per id:
 * ~5 µs of every submit, docs/benchmarks.md). Each byte is handed out once; the pool is the CSPRNG's output as
 * randomBytes gives it, the way crypto.randomUUID buffers its entropy.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let offset = 0;
function randomByte(): number {
  if (offset >= pool.length) {
    pool = randomBytes(POOL_BYTES);
    offset = 0;
  }
  return pool[offset++]!;
}

/** n random bytes as 2n lowercase hex digits, from the same pool. */
export function randomHex(n: number): string {
  if (offset + n > pool.length) {
    pool = randomBytes(Math.max(POOL_BYTES, n));
    offset = 0;
  }
  offset += n;
  return pool.toString('hex', offset - n, offset);
}

/** n random base62 characters (rejection sampling: no modulo bias). */
export function randomBase62(n: number): string {
  let out = '';
  while (out.length < n) {
    const b = randomByte();
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}

/** `task_` + 24 base62 characters (~143 bits): unguessable. */
export const newTaskId = (): string => `task_${randomBase62(24)}`;

/** API key secrets: `sk-` + 40 base62 characters. */
export const newApiKeySecret = (): string => `sk-${randomBase62(40)}`;

export const hashApiKey = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex');

/** What may be shown of a key: its first characters. */
export const keyPrefix = (secret: string): string => `${secret.slice(0, 7)}…`;
