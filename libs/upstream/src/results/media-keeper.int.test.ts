import { mkdtemp, readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExpectedOutput } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import type { ChannelTarget, UpstreamMedia } from '../adapter';
import { PublicHostResolver } from '../public-host';
import { LocalDiskResultStore } from './local-disk.result-store';
import { createMediaKeeper, type ClosableMediaKeeper, type MediaKeeperOptions } from './media-keeper';
import { createResultLinks } from './result-links';
import type { ResultStore } from './result-store';

/** A PNG header of `w`×`h` (signature and IHDR), padded to `size` bytes: enough for the sniff and the size reader. */
function png(w: number, h: number, size = 64): Buffer {
  const b = Buffer.alloc(size);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(b, 0);
  b.writeUInt32BE(13, 8);
  b.write('IHDR', 12, 'latin1');
  b.writeUInt32BE(w, 16);
  b.writeUInt32BE(h, 20);
  return b;
}
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom', 'latin1'), Buffer.alloc(52, 7)]);

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
interface FileHost {
  url: string;
  host: string;
  requests: { path: string; auth?: string }[];
  close(): Promise<void>;
}

async function fileHost(handler: Handler): Promise<FileHost> {
  const requests: FileHost['requests'] = [];
  const server = http.createServer((req, res) => {
    requests.push({ path: req.url ?? '', auth: req.headers.authorization });
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

const channel = (baseUrl: string): ChannelTarget => ({ id: 'ch1', name: 'vendor', protocol: 'fal', baseUrl, apiKey: 'vendor-key', modelMap: {}, settings: {} });
const IMAGES: ExpectedOutput = { kind: 'images', count: 1 };
const VIDEOS: ExpectedOutput = { kind: 'videos', count: 1 };
const NOW_MS = 1_700_000_000_000;
const links = createResultLinks({ publicBaseUrl: 'https://gw.example', signingKey: 'a-test-signing-key-0123456789abcdef' });

let dir: string;
let store: LocalDiskResultStore;
const hosts: FileHost[] = [];
const keepers: ClosableMediaKeeper[] = [];

function keeper(o: Partial<MediaKeeperOptions> = {}): ClosableMediaKeeper {
  const k = createMediaKeeper({
    store,
    links,
    publicHosts: new PublicHostResolver({ timeoutMs: 1000, cacheTtlMs: 0 }),
    now: () => NOW_MS,
    timeoutMs: 5000,
    ...o,
  });
  keepers.push(k);
  return k;
}
async function host(handler: Handler): Promise<FileHost> {
  const h = await fileHost(handler);
  hosts.push(h);
  return h;
}
const keyOf = (url: string): string => new URL(url).pathname.replace(/^\/v1\/results\//, '');
async function bytesOf(key: string): Promise<Buffer | undefined> {
  const o = await store.open(key);
  if (!o) return undefined;
  const chunks: Buffer[] = [];
  for await (const c of o.body) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
async function typeOf(key: string): Promise<string | undefined> {
  const o = await store.open(key);
  o?.body.destroy();
  return o?.contentType;
}
async function failure(p: Promise<unknown>): Promise<UpstreamError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof UpstreamError)) throw new Error(`expected an UpstreamError, got ${String(e)}`);
  return e;
}
/** Every file under the store's directory (temp files included). */
async function files(): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true })).filter((d) => d.isFile()).map((d) => d.name);
}

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'gmg-results-'));
  store = new LocalDiskResultStore(dir);
});
afterEach(async () => {
  await Promise.all(keepers.splice(0).map((k) => k.close()));
  await Promise.all(hosts.splice(0).map((h) => h.close()));
  await rm(dir, { recursive: true, force: true });
});

describe('MediaKeeper (real HTTP file hosts on loopback, real disk)', () => {
  it('downloads a file from the channel host with its headers, stores it and answers a signed link with the image size', async () => {
    const body = png(640, 480, 4096);
    const h = await host((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(body));
    const media: UpstreamMedia[] = [{ kind: 'image', source: { url: `${h.url}/files/out.png`, headers: { authorization: 'Key vendor-key' } } }];
    const result = await keeper().keep({ taskId: 'task_abc', channel: channel(h.url), media, result: { text: 'kept' }, expected: IMAGES });

    expect(h.requests).toEqual([{ path: '/files/out.png', auth: 'Key vendor-key' }]);
    expect(result.text).toBe('kept');
    expect(result.images).toHaveLength(1);
    const img = result.images![0]!;
    expect(img).toMatchObject({ width: 640, height: 480, format: 'png' });
    const u = new URL(img.url);
    expect(u.origin + u.pathname).toBe('https://gw.example/v1/results/task_abc/0.png');
    const expires = u.searchParams.get('expires')!;
    expect(Number(expires)).toBe(NOW_MS / 1000 + 86_400);
    expect(links.verify('task_abc/0.png', expires, u.searchParams.get('signature')!, NOW_MS / 1000)).toBe(true);
    expect(await bytesOf('task_abc/0.png')).toEqual(body);
    expect(await typeOf('task_abc/0.png')).toBe('image/png');
  });

  it('refuses a link to a loopback host that is not the channel host (public-host filter), final, without fetching it', async () => {
    const other = await host((_req, res) => res.end(png(1, 1)));
    const own = await host((_req, res) => res.end(png(1, 1)));
    const e = await failure(
      keeper().keep({ taskId: 't1', channel: channel(own.url), media: [{ kind: 'image', source: { url: `${other.url}/x.png` } }], expected: IMAGES }),
    );
    expect(e.retryable).toBe(false);
    expect(e.message).toMatch(/not public/);
    expect(other.requests).toHaveLength(0);
    expect(await files()).toEqual([]);
  });

  it('follows a redirect on the channel host with the headers, and refuses one to another loopback host', async () => {
    const other = await host((_req, res) => res.end(png(1, 1)));
    const h = await host((req, res) => {
      if (req.url === '/a') res.writeHead(302, { location: '/b' }).end();
      else if (req.url === '/b') res.end(png(2, 3));
      else res.writeHead(302, { location: `${other.url}/x` }).end();
    });
    const k = keeper();
    const ok = await k.keep({
      taskId: 't2',
      channel: channel(h.url),
      media: [{ kind: 'image', source: { url: `${h.url}/a`, headers: { authorization: 'k' } } }],
      expected: IMAGES,
    });
    expect(ok.images![0]).toMatchObject({ width: 2, height: 3 });
    expect(h.requests).toEqual([
      { path: '/a', auth: 'k' },
      { path: '/b', auth: 'k' },
    ]);
    const e = await failure(k.keep({ taskId: 't3', channel: channel(h.url), media: [{ kind: 'image', source: { url: `${h.url}/c` } }], expected: IMAGES }));
    expect(e.retryable).toBe(false);
    expect(other.requests).toHaveLength(0);
  });

  it('cuts off a file larger than the cap mid-stream (no content-length) and leaves nothing stored', async () => {
    let sent = 0;
    const h = await host((_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' }); // chunked: no length to refuse up front
      res.write(png(10, 10, 1024));
      // Keeps sending until the client goes away; bounded so a broken cap cannot run forever.
      const more = (): void => {
        while (sent < 50 * 1024 * 1024 && res.write(Buffer.alloc(16 * 1024))) sent += 16 * 1024;
        if (sent < 50 * 1024 * 1024 && !res.destroyed) res.once('drain', more);
        else res.end();
      };
      res.on('close', () => res.removeAllListeners('drain'));
      more();
    });
    const e = await failure(
      keeper({ maxBytes: { image: 256 * 1024 } }).keep({
        taskId: 't4',
        channel: channel(h.url),
        media: [{ kind: 'image', source: { url: `${h.url}/big` } }],
        expected: IMAGES,
      }),
    );
    expect(e.retryable).toBe(false);
    expect(e.message).toMatch(/larger than the result size cap/);
    expect(sent).toBeLessThan(50 * 1024 * 1024);
    expect(await typeOf('t4/0.png')).toBeUndefined();
    expect(await files()).toEqual([]);
  });

  it('refuses a declared length over the cap before reading the body', async () => {
    const h = await host((_req, res) =>
      res.writeHead(200, { 'content-length': String(300 * 1024) }).end(Buffer.concat([png(1, 1), Buffer.alloc(300 * 1024 - 64)])),
    );
    const e = await failure(
      keeper({ maxBytes: { image: 256 * 1024 } }).keep({
        taskId: 't5',
        channel: channel(h.url),
        media: [{ kind: 'image', source: { url: `${h.url}/x` } }],
        expected: IMAGES,
      }),
    );
    expect(e.retryable).toBe(false);
    expect(await files()).toEqual([]);
  });

  it('times out a server that stalls mid-body: retryable, nothing stored', async () => {
    const h = await host((_req, res) => {
      res.writeHead(200);
      res.write(png(4, 4, 70 * 1024)); // the head arrives, then nothing more
    });
    const started = Date.now();
    const e = await failure(
      keeper({ timeoutMs: 300 }).keep({
        taskId: 't6',
        channel: channel(h.url),
        media: [{ kind: 'image', source: { url: `${h.url}/slow` } }],
        expected: IMAGES,
      }),
    );
    expect(e.retryable).toBe(true);
    expect(e.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(4000);
    expect(await files()).toEqual([]);
  });

  it('times out a server that never answers its headers', async () => {
    const h = await host(() => undefined);
    const e = await failure(
      keeper({ timeoutMs: 300 }).keep({ taskId: 't7', channel: channel(h.url), media: [{ kind: 'video', source: { url: `${h.url}/v` } }], expected: VIDEOS }),
    );
    expect(e).toMatchObject({ retryable: true, kind: 'timeout' });
  });

  it('refuses a file that is not the kind the task expects (final)', async () => {
    const h = await host((req, res) => res.end(req.url === '/html' ? '<html>expired</html>' : png(8, 8)));
    const k = keeper();
    const html = await failure(
      k.keep({ taskId: 't8', channel: channel(h.url), media: [{ kind: 'image', source: { url: `${h.url}/html` } }], expected: IMAGES }),
    );
    expect(html).toMatchObject({ retryable: false, kind: 'bad_request' });
    const pngAsVideo = await failure(
      k.keep({ taskId: 't9', channel: channel(h.url), media: [{ kind: 'video', source: { url: `${h.url}/p` } }], expected: VIDEOS }),
    );
    expect(pngAsVideo.message).toMatch(/not a video/);
    expect(await files()).toEqual([]);
  });

  it('an expired vendor link (403) is final; a 503 is retryable', async () => {
    const h = await host((req, res) => res.writeHead(req.url === '/gone' ? 403 : 503).end('no'));
    const k = keeper();
    const gone = await failure(
      k.keep({ taskId: 'ta', channel: channel(h.url), media: [{ kind: 'image', source: { url: `${h.url}/gone` } }], expected: IMAGES }),
    );
    expect(gone).toMatchObject({ retryable: false, status: 403, message: 'Upstream result could not be downloaded (HTTP 403)' });
    const busy = await failure(
      k.keep({ taskId: 'tb', channel: channel(h.url), media: [{ kind: 'image', source: { url: `${h.url}/busy` } }], expected: IMAGES }),
    );
    expect(busy).toMatchObject({ retryable: true, status: 503 });
  });

  it('keeps base64 files (data URI or bare) without any download: images and a video with its expiry and duration', async () => {
    const k = keeper({ linkTtlSeconds: 3600 });
    const img = png(32, 16);
    const r = await k.keep({
      taskId: 'tc',
      channel: channel('http://127.0.0.1:9'),
      media: [
        { kind: 'image', source: { base64: `data:image/png;base64,${img.toString('base64')}` } },
        { kind: 'image', source: { base64: img.toString('base64') }, width: 30, height: 15 },
      ],
      expected: { kind: 'images', count: 2 },
    });
    expect(r.images!.map((i) => [keyOf(i.url), i.width, i.height, i.format])).toEqual([
      ['tc/0.png', 32, 16, 'png'],
      ['tc/1.png', 30, 15, 'png'],
    ]);
    expect(await bytesOf('tc/1.png')).toEqual(img);
    const v = await k.keep({
      taskId: 'td',
      channel: channel('http://127.0.0.1:9'),
      media: [{ kind: 'video', source: { base64: MP4.toString('base64') }, durationSeconds: 5 }],
      expected: VIDEOS,
    });
    expect(v.videos).toEqual([{ url: [expect.stringContaining('/v1/results/td/0.mp4?expires=')], expires_at: NOW_MS / 1000 + 3600, duration: 5 }]);
    expect(await typeOf('td/0.mp4')).toBe('video/mp4');
  });

  it('refuses inline base64 over the cap before decoding it', async () => {
    const e = await failure(
      keeper({ maxBytes: { image: 1024 } }).keep({
        taskId: 'te',
        channel: channel('http://127.0.0.1:9'),
        media: [{ kind: 'image', source: { base64: png(1, 1, 4096).toString('base64') } }],
        expected: IMAGES,
      }),
    );
    expect(e.retryable).toBe(false);
  });

  it('keeping the same task again overwrites the same key (a retried step adds nothing)', async () => {
    const k = keeper();
    const first = await k.keep({
      taskId: 'tf',
      channel: channel('http://127.0.0.1:9'),
      media: [{ kind: 'image', source: { base64: png(1, 1).toString('base64') } }],
      expected: IMAGES,
    });
    const again = await k.keep({
      taskId: 'tf',
      channel: channel('http://127.0.0.1:9'),
      media: [{ kind: 'image', source: { base64: png(2, 2).toString('base64') } }],
      expected: IMAGES,
    });
    expect(keyOf(again.images![0]!.url)).toBe(keyOf(first.images![0]!.url));
    expect(await bytesOf('tf/0.png')).toEqual(png(2, 2));
    expect(await files()).toEqual(['0.png']);
  });

  it('a store write that fails is retryable', async () => {
    const broken: ResultStore = { put: () => Promise.reject(new Error('disk full')), open: () => Promise.resolve(undefined) };
    const h = await host((_req, res) => res.end(png(1, 1)));
    const e = await failure(
      keeper({ store: broken }).keep({ taskId: 'tg', channel: channel(h.url), media: [{ kind: 'image', source: { url: `${h.url}/x` } }], expected: IMAGES }),
    );
    expect(e).toMatchObject({ retryable: true, kind: 'server' });
    expect(e.message).toMatch(/result store write failed/);
  });
});
