import { createHash, randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** n random base62 characters (rejection sampling: no modulo bias). */
export function randomBase62(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const b of randomBytes(n * 2)) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === n) break;
    }
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
