import { Readable } from 'node:stream';
import { S3Client } from '@aws-sdk/client-s3';
import { createResultStore, parseS3Url } from './create-result-store';
import { S3ResultStore } from './s3.result-store';

/**
 * The S3 store against the real SDK with no network: a middleware innermost in the client's stack (after signing, under the response parser)
 * records each request and answers it as S3 would. No S3-compatible server is run here (none is a dependency);
 * the e2e suites run the local-disk store.
 */
interface Seen {
  method: string;
  hostname: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
}

interface Answer {
  statusCode: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

function interceptedClient(answer: (req: Seen) => Answer): { client: S3Client; seen: Seen[] } {
  const seen: Seen[] = [];
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: 'http://s3.test:9000',
    forcePathStyle: true,
    credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret-for-the-test' },
  });
  client.middlewareStack.add(
    () => async (args) => {
      const r = (args as { request: { method: string; hostname: string; path: string; headers: Record<string, string>; body?: unknown } }).request;
      const chunks: Buffer[] = [];
      if (r.body instanceof Readable) for await (const c of r.body) chunks.push(Buffer.from(c as Buffer));
      else if (r.body) chunks.push(Buffer.from(r.body as Uint8Array));
      const req: Seen = { method: r.method, hostname: r.hostname, path: r.path, headers: r.headers, body: Buffer.concat(chunks) };
      seen.push(req);
      const a = answer(req);
      return {
        response: { statusCode: a.statusCode, headers: a.headers ?? {}, body: Readable.from(a.body === undefined ? [] : [Buffer.from(a.body)]) },
      } as never;
    },
    { step: 'deserialize', priority: 'low', name: 'interceptForTest' },
  );
  return { client, seen };
}

describe('S3ResultStore (SDK requests intercepted in the middleware stack, no network)', () => {
  it('puts a small body as one PutObject under <prefix>/<key>, path style, signed, with its content type', async () => {
    const { client, seen } = interceptedClient(() => ({ statusCode: 200, headers: { etag: '"abc"' } }));
    const store = new S3ResultStore({ bucket: 'media', prefix: 'results', client });
    const out = await store.put('task_1/0.png', Readable.from([Buffer.from('hello '), Buffer.from('world')]), { contentType: 'image/png' });
    expect(out).toEqual({ bytes: 11 });
    expect(seen).toHaveLength(1);
    const [put] = seen;
    expect(put).toMatchObject({ method: 'PUT', hostname: 's3.test', path: '/media/results/task_1/0.png' });
    expect(put!.headers['content-type']).toBe('image/png');
    expect(put!.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDTEST\//);
    expect(put!.body.toString()).toBe('hello world');
  });

  it('opens an object by its key: the stream, its type and its length', async () => {
    const { client, seen } = interceptedClient(() => ({ statusCode: 200, headers: { 'content-type': 'video/mp4', 'content-length': '4' }, body: 'abcd' }));
    const store = new S3ResultStore({ bucket: 'media', prefix: 'r/', client });
    const o = await store.open('task_2/0.mp4');
    expect(seen.map((s) => [s.method, s.path])).toEqual([['GET', '/media/r/task_2/0.mp4']]);
    expect(o).toMatchObject({ contentType: 'video/mp4', bytes: 4 });
    const chunks: Buffer[] = [];
    for await (const c of o!.body) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('abcd');
  });

  it('answers undefined for a missing object (NoSuchKey) and for an invalid key, without a request for the latter', async () => {
    const { client, seen } = interceptedClient(() => ({
      statusCode: 404,
      headers: { 'content-type': 'application/xml' },
      body: '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>',
    }));
    const store = new S3ResultStore({ bucket: 'media', prefix: '', client });
    expect(await store.open('task_3/0.png')).toBeUndefined();
    expect(await store.open('../etc/passwd')).toBeUndefined();
    expect(seen.map((s) => s.path)).toEqual(['/media/task_3/0.png']);
  });

  it('a store that answers 500 fails the put (the keeper makes it retryable)', async () => {
    const { client } = interceptedClient(() => ({ statusCode: 500, body: '<Error><Code>InternalError</Code><Message>boom</Message></Error>' }));
    const store = new S3ResultStore({ bucket: 'media', prefix: 'p', client });
    await expect(store.put('task_4/0.png', Readable.from([Buffer.from('x')]), { contentType: 'image/png' })).rejects.toThrow();
  });

  it('createResultStore: s3://bucket/prefix names the bucket and the key prefix; other schemes are refused', () => {
    expect(parseS3Url('s3://my-bucket/gw/results')).toEqual({ bucket: 'my-bucket', prefix: 'gw/results' });
    expect(parseS3Url('s3://my-bucket')).toEqual({ bucket: 'my-bucket', prefix: '' });
    expect(new S3ResultStore({ ...parseS3Url('s3://my-bucket/gw/results'), region: 'eu-west-1' }).objectKey('task_5/1.webp')).toBe('gw/results/task_5/1.webp');
    expect(new S3ResultStore({ ...parseS3Url('s3://my-bucket'), region: 'eu-west-1' }).objectKey('k/0.png')).toBe('k/0.png');
    expect(() => createResultStore('http://example.com/x')).toThrow(/only s3:\/\/, file:\/\/ or a path/);
  });
});
