import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalDiskResultStore } from './local-disk.result-store';
import type { ResultStore } from './result-store';
import type { S3ResultStoreOptions } from './s3.result-store';

export type ResultStoreOptions = Pick<S3ResultStoreOptions, 'endpoint' | 'region' | 'forcePathStyle' | 'credentials'>;

/** `s3://bucket/pre/fix` → the bucket and the key prefix. */
export function parseS3Url(url: string): { bucket: string; prefix: string } {
  const u = new URL(url);
  if (u.protocol !== 's3:' || !u.hostname) throw new Error(`RESULT_STORE_URL ${url} names no bucket`);
  return { bucket: u.hostname, prefix: decodeURIComponent(u.pathname.replace(/^\/+/, '')) };
}

/**
 * The store RESULT_STORE_URL names: `s3://bucket/prefix` → S3-compatible object storage (`opts`: endpoint, region,
 * path style; credentials from the SDK's chain unless given); `file:///abs/dir` or a plain path → the local disk
 * (a relative path resolves against the working directory). The AWS SDK is loaded on the first S3 call only: a
 * process on the local disk never pays its start-up time and memory.
 */
export function createResultStore(url: string, opts: ResultStoreOptions = {}): ResultStore {
  if (url.startsWith('s3:')) {
    const s3 = { ...opts, ...parseS3Url(url) };
    let loaded: Promise<ResultStore> | undefined;
    const store = (): Promise<ResultStore> => (loaded ??= import('./s3.result-store').then((m) => new m.S3ResultStore(s3)));
    return {
      put: async (key, body, meta) => (await store()).put(key, body, meta),
      open: async (key) => (await store()).open(key),
    };
  }
  if (url.startsWith('file:')) return new LocalDiskResultStore(fileURLToPath(url));
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) throw new Error(`RESULT_STORE_URL ${url}: only s3://, file:// or a path`);
  return new LocalDiskResultStore(path.resolve(url));
}
