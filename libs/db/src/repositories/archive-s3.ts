import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { HeadObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';

/** Where an exported archive file is also stored; `store` resolves only once the copy is confirmed whole. */
export interface ArchiveTarget {
  /** For the log: `s3://bucket/prefix`. */
  readonly name: string;
  /** Stores `file` as `<object name>`; resolves with where it is once read back equal, throws otherwise. */
  store(file: string, objectName: string): Promise<{ location: string; bytes: number; etag: string }>;
}

export interface S3ArchiveTargetOptions {
  bucket: string;
  /** Key prefix inside the bucket ('' for its root; a trailing slash is added when missing). */
  prefix: string;
  /** An S3-compatible endpoint (MinIO, R2, Ceph); absent: AWS S3 of `region`. */
  endpoint?: string;
  region?: string;
  forcePathStyle?: boolean;
  /** Absent: the SDK's provider chain (AWS_ACCESS_KEY_ID…, a profile, web identity, the instance role). */
  credentials?: S3ClientConfig['credentials'];
  /** Multipart part size (≥ 5 MiB, S3's minimum); 16 MiB by default. */
  partSize?: number;
}

const MIB = 1024 * 1024;

/**
 * The ETags S3 gives an object of this file: the MD5 of the whole (a single PutObject) and the MD5 of the parts' MD5s
 * with `-<parts>` (a multipart upload in parts of `partSize`). Both are returned: lib-storage chooses by the size.
 */
async function expectedEtags(file: string, partSize: number): Promise<string[]> {
  const whole = createHash('md5');
  const partDigests: Buffer[] = [];
  let part = createHash('md5');
  let inPart = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: MIB })) {
    const buf = chunk as Buffer;
    whole.update(buf);
    for (let at = 0; at < buf.length;) {
      const take = Math.min(partSize - inPart, buf.length - at);
      part.update(buf.subarray(at, at + take));
      inPart += take;
      at += take;
      if (inPart === partSize) {
        partDigests.push(part.digest());
        part = createHash('md5');
        inPart = 0;
      }
    }
  }
  if (inPart > 0 || partDigests.length === 0) partDigests.push(part.digest());
  const multipart = `"${createHash('md5').update(Buffer.concat(partDigests)).digest('hex')}-${partDigests.length}"`;
  return [`"${whole.digest('hex')}"`, multipart];
}

/**
 * Archive files in S3-compatible object storage through the official SDK: a streaming `Upload` (lib-storage: one
 * PutObject for a small file, multipart for a large one, parts aborted on failure), then a HeadObject read-back —
 * the object's size must equal the file's and its ETag one S3 would compute for these bytes (MD5 of the whole or of
 * the parts). Anything else throws, so the caller keeps the rows (nothing is dropped that was not confirmed stored).
 * Storage that does not use MD5 ETags (AWS SSE-KMS, some gateways) fails the check: use SSE-S3 for this bucket.
 * Checksums are sent only where S3 requires them (`WHEN_REQUIRED`): plain bodies, which every S3-compatible store takes.
 */
export class S3ArchiveTarget implements ArchiveTarget {
  readonly name: string;
  private readonly client: S3Client;
  private readonly prefix: string;
  private readonly partSize: number;

  constructor(private readonly opts: S3ArchiveTargetOptions) {
    this.client = new S3Client({
      region: opts.region ?? 'us-east-1',
      endpoint: opts.endpoint,
      forcePathStyle: opts.forcePathStyle,
      credentials: opts.credentials,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    this.prefix = opts.prefix === '' || opts.prefix.endsWith('/') ? opts.prefix : `${opts.prefix}/`;
    this.partSize = Math.max(5 * MIB, opts.partSize ?? 16 * MIB);
    this.name = `s3://${opts.bucket}/${this.prefix}`;
  }

  async store(file: string, objectName: string): Promise<{ location: string; bytes: number; etag: string }> {
    const Key = `${this.prefix}${objectName}`;
    const bytes = statSync(file).size;
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.opts.bucket, Key, Body: createReadStream(file), ContentType: 'application/gzip' },
      partSize: this.partSize,
      queueSize: 2,
      leavePartsOnError: false,
    });
    await upload.done();
    const head = await this.client.send(new HeadObjectCommand({ Bucket: this.opts.bucket, Key }));
    const location = `s3://${this.opts.bucket}/${Key}`;
    if (head.ContentLength !== bytes) throw new Error(`${location}: stored ${String(head.ContentLength)} bytes, the file has ${bytes}`);
    const expected = await expectedEtags(file, this.partSize);
    if (!head.ETag || !expected.includes(head.ETag)) throw new Error(`${location}: ETag ${String(head.ETag)} is not the file's (${expected.join(' or ')})`);
    return { location, bytes, etag: head.ETag };
  }

  destroy(): void {
    this.client.destroy();
  }
}
