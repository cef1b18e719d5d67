import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GetObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { checkResultKey, isResultKey, type ResultStore } from './result-store';

export interface S3ResultStoreOptions {
  bucket: string;
  /** Key prefix inside the bucket (`results/`); '' for the bucket's root. A trailing slash is added when missing. */
  prefix: string;
  /** An S3-compatible endpoint (MinIO, R2, GCS interop); absent: AWS S3 of `region`. */
  endpoint?: string;
  region?: string;
  /** `https://endpoint/bucket/key` instead of `https://bucket.endpoint/key` (MinIO and most self-hosted stores). */
  forcePathStyle?: boolean;
  /**
   * Absent (the normal case): the SDK's own provider chain — AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile,
   * web identity, the instance role — so no secret passes through the gateway's config.
   */
  credentials?: S3ClientConfig['credentials'];
  /** A client built elsewhere (tests intercept its middleware stack); the options above then only name bucket and prefix. */
  client?: S3Client;
}

/** Parts of a multipart upload: 8 MiB each, two in flight, so one put holds at most ~16 MiB of a video in memory. */
const PART_SIZE = 8 * 1024 * 1024;
const QUEUE_SIZE = 2;

/**
 * Results in S3-compatible object storage through the official SDK. A put is a streaming `Upload` (lib-storage:
 * a single PUT for a small body, multipart for a large one; the length need not be known); the object appears
 * whole or not at all, and a failed body aborts the multipart upload. `open` is a GetObject.
 */
export class S3ResultStore implements ResultStore {
  private readonly client: S3Client;
  private readonly prefix: string;

  constructor(private readonly opts: S3ResultStoreOptions) {
    this.client =
      opts.client ??
      new S3Client({
        region: opts.region ?? 'us-east-1',
        endpoint: opts.endpoint,
        forcePathStyle: opts.forcePathStyle,
        credentials: opts.credentials,
      });
    this.prefix = opts.prefix === '' || opts.prefix.endsWith('/') ? opts.prefix : `${opts.prefix}/`;
  }

  /** The object key of a result key (exposed for the tests of the key layout). */
  objectKey(key: string): string {
    return `${this.prefix}${key}`;
  }

  async put(key: string, body: Readable, meta: { contentType: string }): Promise<{ bytes: number }> {
    checkResultKey(key);
    let bytes = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        done(null, chunk);
      },
    });
    // A body that errors fails the upload rather than leaving it waiting for more parts.
    const source = pipeline(body, counted);
    // Settles only when the body fails (a body that ends well leaves the race to the upload).
    const sourceFailed = source.then(() => new Promise<never>(() => undefined));
    sourceFailed.catch(() => undefined);
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.opts.bucket, Key: this.objectKey(key), Body: counted, ContentType: meta.contentType },
      partSize: PART_SIZE,
      queueSize: QUEUE_SIZE,
      leavePartsOnError: false,
    });
    try {
      await Promise.race([upload.done(), sourceFailed]);
    } catch (e) {
      await upload.abort().catch(() => undefined);
      body.destroy();
      throw e;
    }
    return { bytes };
  }

  async open(key: string): Promise<{ body: Readable; contentType: string; bytes: number } | undefined> {
    if (!isResultKey(key)) return undefined;
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key: this.objectKey(key) }));
      if (!(out.Body instanceof Readable)) throw new Error('S3 GetObject answered without a stream body');
      return { body: out.Body, contentType: out.ContentType ?? 'application/octet-stream', bytes: out.ContentLength ?? 0 };
    } catch (e) {
      const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (err.name === 'NoSuchKey' || err.$metadata?.httpStatusCode === 404) return undefined;
      throw e;
    }
  }
}
