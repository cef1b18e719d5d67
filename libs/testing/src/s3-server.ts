import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A minimal S3-speaking HTTP server on loopback for tests (no S3-compatible server is a dependency of the project):
 * path-style requests `/<bucket>/<key>` for PutObject, the multipart calls (CreateMultipartUpload, UploadPart,
 * CompleteMultipartUpload, AbortMultipartUpload), HeadObject and GetObject — what the official SDK and lib-storage's
 * `Upload` send. ETags as S3 computes them: the MD5 of the body, or for a multipart object the MD5 of its parts' MD5s
 * followed by `-<parts>`. A request must be SigV4-signed (its Authorization header is checked for the scheme, not the
 * signature). Bodies in aws-chunked encoding are refused (501): clients must send plain bodies
 * (`requestChecksumCalculation: 'WHEN_REQUIRED'`).
 */
export interface S3TestServer {
  /** `http://127.0.0.1:<port>` (the SDK's `endpoint`, with `forcePathStyle: true`). */
  endpoint: string;
  /** Stored objects by `<bucket>/<key>`. */
  objects: Map<string, { body: Buffer; etag: string }>;
  /** Every request as `METHOD /path?query` (what the client did). */
  log: string[];
  /**
   * Changes what is stored from now on (a store that loses or flips bytes): the answer to the upload still carries the
   * ETag of what was sent, HeadObject the size and MD5 of what is kept. Absent: stored as received.
   */
  tamper: ((key: string, body: Buffer) => Buffer) | undefined;
  /** Answers the next `n` requests whose `METHOD /path` matches with 500 InternalError. */
  failNext(pattern: RegExp, n?: number): void;
  close(): Promise<void>;
}

const md5 = (b: Buffer): Buffer => createHash('md5').update(b).digest();
const xml = (body: string): string => `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export async function startS3TestServer(): Promise<S3TestServer> {
  const objects = new Map<string, { body: Buffer; etag: string }>();
  const uploads = new Map<string, { key: string; parts: Map<number, Buffer> }>();
  const log: string[] = [];
  const failures: Array<{ pattern: RegExp; left: number }> = [];
  const state: Pick<S3TestServer, 'tamper'> = { tamper: undefined };

  const send = (res: http.ServerResponse, status: number, headers: Record<string, string>, body?: string | Buffer): void => {
    res.writeHead(status, { 'x-amz-request-id': randomUUID(), ...headers });
    res.end(body);
  };
  const error = (res: http.ServerResponse, status: number, code: string, message: string): void =>
    send(res, status, { 'content-type': 'application/xml' }, xml(`<Error><Code>${code}</Code><Message>${esc(message)}</Message></Error>`));
  const store = (key: string, body: Buffer, etag: string): void => {
    const kept = state.tamper ? state.tamper(key, body) : body;
    // the object's own ETag is what it holds (the answer to the upload still carried the one of what was sent)
    objects.set(key, { body: kept, etag: kept === body ? etag : `"${md5(kept).toString('hex')}"` });
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://s3.local');
      const key = decodeURIComponent(url.pathname.slice(1));
      const q = url.searchParams;
      const line = `${req.method} ${url.pathname}`;
      log.push(`${line}${url.search}`);
      const body = Buffer.concat(chunks);
      const failing = failures.find((f) => f.left > 0 && f.pattern.test(line));
      if (failing) {
        failing.left--;
        return error(res, 500, 'InternalError', 'injected by the test');
      }
      if (!String(req.headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 ')) return error(res, 403, 'AccessDenied', 'unsigned request');
      if (String(req.headers['content-encoding'] ?? '').includes('aws-chunked')) return error(res, 501, 'NotImplemented', 'aws-chunked bodies');
      if (!key.includes('/')) return error(res, 400, 'InvalidRequest', 'path-style /<bucket>/<key> only');
      if (req.method === 'POST' && q.has('uploads')) {
        const id = randomUUID();
        uploads.set(id, { key, parts: new Map() });
        const [bucket, ...rest] = key.split('/');
        return send(
          res,
          200,
          { 'content-type': 'application/xml' },
          xml(
            `<InitiateMultipartUploadResult><Bucket>${esc(bucket!)}</Bucket><Key>${esc(rest.join('/'))}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`,
          ),
        );
      }
      const uploadId = q.get('uploadId');
      if (uploadId !== null) {
        const up = uploads.get(uploadId);
        if (!up || up.key !== key) return error(res, 404, 'NoSuchUpload', uploadId);
        if (req.method === 'PUT') {
          up.parts.set(Number(q.get('partNumber')), body);
          return send(res, 200, { etag: `"${md5(body).toString('hex')}"` });
        }
        if (req.method === 'DELETE') {
          uploads.delete(uploadId);
          return send(res, 204, {});
        }
        if (req.method === 'POST') {
          const numbers = [...body.toString('utf8').matchAll(/<PartNumber>(\d+)<\/PartNumber>/g)].map((m) => Number(m[1]));
          if (numbers.length === 0 || numbers.some((n) => !up.parts.has(n))) return error(res, 400, 'InvalidPart', 'a listed part was not uploaded');
          const parts = numbers.map((n) => up.parts.get(n)!);
          const etag = `"${md5(Buffer.concat(parts.map(md5))).toString('hex')}-${parts.length}"`;
          store(key, Buffer.concat(parts), etag);
          uploads.delete(uploadId);
          const [bucket, ...rest] = key.split('/');
          return send(
            res,
            200,
            { 'content-type': 'application/xml' },
            xml(
              `<CompleteMultipartUploadResult><Location>http://s3.local/${esc(key)}</Location><Bucket>${esc(bucket!)}</Bucket><Key>${esc(rest.join('/'))}</Key><ETag>${esc(etag)}</ETag></CompleteMultipartUploadResult>`,
            ),
          );
        }
      }
      if (req.method === 'PUT') {
        const etag = `"${md5(body).toString('hex')}"`;
        store(key, body, etag);
        return send(res, 200, { etag });
      }
      const obj = objects.get(key);
      if (req.method === 'HEAD' || req.method === 'GET') {
        if (!obj) return req.method === 'HEAD' ? send(res, 404, {}) : error(res, 404, 'NoSuchKey', 'The specified key does not exist.');
        const headers = { etag: obj.etag, 'content-length': String(obj.body.length), 'content-type': 'application/octet-stream' };
        return req.method === 'HEAD' ? send(res, 200, headers) : send(res, 200, headers, obj.body);
      }
      return error(res, 501, 'NotImplemented', `${req.method} is not served by the test server`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    objects,
    log,
    get tamper() {
      return state.tamper;
    },
    set tamper(f) {
      state.tamper = f;
    },
    failNext(pattern, n = 1) {
      failures.push({ pattern, left: n });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
