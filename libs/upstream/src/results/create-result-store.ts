import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalDiskResultStore } from './local-disk.result-store';
import type { ResultStore } from './result-store';
import { S3ResultStore, type S3ResultStoreOptions } from './s3.result-store';

export type ResultStoreOptions = Pick<S3ResultStoreOptions, 'endpoint' | 'region' | 'forcePathStyle' | 'credentials'>;

/**
 * The store RESULT_STORE_URL names: `s3://bucket/prefix` → S3-compatible object storage (`opts`: endpoint, region,
 * path style; credentials from the SDK's chain unless given); `file:///abs/dir` or a plain path → the local disk
 * (a relative path resolves against the working directory).
 */
export function createResultStore(url: string, opts: ResultStoreOptions = {}): ResultStore {
  if (url.startsWith('s3://')) {
    const u = new URL(url);
    if (!u.hostname) throw new Error(`RESULT_STORE_URL ${url} names no bucket`);
    return new S3ResultStore({ ...opts, bucket: u.hostname, prefix: decodeURIComponent(u.pathname.replace(/^\/+/, '')) });
  }
  if (url.startsWith('file:')) return new LocalDiskResultStore(fileURLToPath(url));
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) throw new Error(`RESULT_STORE_URL ${url}: only s3://, file:// or a path`);
  return new LocalDiskResultStore(path.resolve(url));
}
