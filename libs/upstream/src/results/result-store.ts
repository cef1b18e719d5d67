import type { Readable } from 'node:stream';

/**
 * Where the gateway keeps the files of finished tasks (results kept by us, issue 34): a key → bytes store. Keys are
 * ours (`<taskId>/<index>.<ext>`), validated by `checkResultKey`; bodies stream through, never whole in memory.
 */
export interface ResultStore {
  /**
   * Stores `body` under `key`, replacing what was there (a retried step overwrites). Atomic for readers: `open`
   * sees the old object or the whole new one, never half of it. The caller bounds the body's size and time; a body
   * that errors leaves nothing behind. Resolves with the bytes stored.
   */
  put(key: string, body: Readable, meta: { contentType: string }): Promise<{ bytes: number }>;
  /** The object, or undefined when there is none (or the key is not a valid key). */
  open(key: string): Promise<{ body: Readable; contentType: string; bytes: number } | undefined>;
  /**
   * Removes objects last written before `cutoff` (local disk: the edge's timer; object storage has no such call:
   * its lifecycle rule does it, docs/upstreams/results.md). Resolves with how many were removed.
   */
  sweepOlderThan?(cutoff: Date): Promise<number>;
}

/** Path-like keys of safe characters only: no `..`, no empty or dot segments, no leading slash. */
const KEY = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*(\/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*$/;
const MAX_KEY_LENGTH = 512;

export const isResultKey = (key: string): boolean => key.length <= MAX_KEY_LENGTH && KEY.test(key) && !key.split('/').some((s) => s.includes('..'));

export function checkResultKey(key: string): void {
  if (!isResultKey(key)) throw new Error(`invalid result key '${key.slice(0, 80)}'`);
}

const TYPES: Record<string, string> = {
  jpg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  gif: 'image/gif',
  mp4: 'video/mp4',
  mov: 'video/quicktime',
  webm: 'video/webm',
};

/** The content type a key's extension names (what the local store serves: no sidecar file to keep in step). */
export const contentTypeOfKey = (key: string): string => TYPES[/\.([a-z0-9]+)$/.exec(key)?.[1] ?? ''] ?? 'application/octet-stream';
