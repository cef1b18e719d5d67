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

/**
 * The time, ms since the epoch, as 9 lowercase base-36 digits (good until the year 5188). An id that starts with it
 * sorts by creation time, under C and linguistic collations alike (digits and lowercase letters only), so each
 * B-tree keyed by such ids — `tasks_pkey`, the open-task keyset index, the ledger's (task_id, kind) — grows at its
 * right edge: the pages a new row touches stay in shared buffers however large the table gets. With random ids
 * every insert touched a random leaf of each, and a table past shared_buffers read ~1.5 pages from disk per task
 * (docs/benchmarks.md, "One hot account across edges", sustained mode).
 */
export const timePrefix36 = (now = Date.now()): string => now.toString(36).padStart(9, '0');

/** `task_` + its creation time (9 base-36 digits) + 15 base62 characters (~89 random bits): unguessable, time-ordered. */
export const newTaskId = (): string => `task_${timePrefix36()}${randomBase62(15)}`;

/** API key secrets: `sk-` + 40 base62 characters. */
export const newApiKeySecret = (): string => `sk-${randomBase62(40)}`;

export const hashApiKey = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex');

/** What may be shown of a key: its first characters. */
export const keyPrefix = (secret: string): string => `${secret.slice(0, 7)}…`;
