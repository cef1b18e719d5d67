import { Readable } from 'node:stream';
import { readImageHeader, type ExpectedOutput, type ImageResult, type TaskResult, type VideoResult } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import { resultStoreBytes, upstreamDuration, upstreamRequests } from '@gmg/observability';
import type { ChannelTarget, UpstreamMedia } from '../adapter';
import { channelDispatcher } from '../channel-overrides';
import { createDownloader, downloadFailure, type HostCheck, type OpenDownload } from './media-download';
import { SNIFF_BYTES, sniffMediaType, type MediaType } from './media-type';
import type { ResultLinks } from './result-links';
import { isResultKey, type ResultStore } from './result-store';

/**
 * Keeps a finished task's files in the result store (results kept by us, issue 34) and answers the task's result
 * with the gateway's own signed links in their place.
 * - Streams each file through (never a whole video in memory), bounded in bytes and time, its type checked
 *   (images: jpeg/png/webp/gif; videos: mp4/webm/quicktime) against what the task expects.
 * - Idempotent: the same task and index always land on the same key, so a retried step overwrites, never adds.
 * - A link on the channel's own host is fetched as the channel is trusted (loopback allowed); any other host must
 *   resolve to public addresses only.
 * Throws `UpstreamError`: retryable for a failed download or store write (the step machine retries the poll),
 * final for a file that is not what the task asked for (wrong type, over the size cap) or a link that is refused.
 */
export interface MediaKeeper {
  keep(input: KeepInput): Promise<TaskResult>;
}

export interface KeepInput {
  taskId: string;
  channel: ChannelTarget;
  media: readonly UpstreamMedia[];
  /** Fields of the result the adapter already made (e.g. `text`); `images`/`videos` are replaced by ours. */
  result?: TaskResult;
  expected: ExpectedOutput;
}

export interface MediaKeeperOptions {
  store: ResultStore;
  links: Pick<ResultLinks, 'url'>;
  /** The public-host filter for links off the channel's own host (PublicHostResolver). */
  publicHosts: HostCheck;
  /** How long our links work (spec 2.2: video links 24 h). Default 86 400. */
  linkTtlSeconds?: number;
  /** Largest file kept, per kind. Default 50 MiB per image, 512 MiB per video. */
  maxBytes?: { image?: number; video?: number };
  /** Per file: the download and the store write together. Default 5 minutes. */
  timeoutMs?: number;
  now?: () => number;
}

/** The keeper plus its download pools, which the worker closes at shutdown. */
export interface ClosableMediaKeeper extends MediaKeeper {
  close(): Promise<void>;
}

const MIB = 1024 * 1024;
/** Head of an image read before the store write: the sniff, and JPEG's size (its SOF marker can follow EXIF). */
const IMAGE_HEAD_BYTES = 64 * 1024;

/** One file kept: its link and what its bytes said. */
interface Kept {
  url: string;
  type: MediaType;
  width?: number;
  height?: number;
}

/** One file of a task: where it goes, until when its link works. */
interface Item {
  input: KeepInput;
  index: number;
  m: UpstreamMedia;
  expiresAtS: number;
}

class TooLarge extends Error {}

export function createMediaKeeper(opts: MediaKeeperOptions): ClosableMediaKeeper {
  const now = opts.now ?? Date.now;
  const ttl = opts.linkTtlSeconds ?? 86_400;
  const max = { image: opts.maxBytes?.image ?? 50 * MIB, video: opts.maxBytes?.video ?? 512 * MIB };
  const timeoutMs = opts.timeoutMs ?? 300_000;
  const downloader = createDownloader({ publicHosts: opts.publicHosts, timeoutMs, userAgent: 'gmg-result-keeper' });

  /**
   * Streams a file (its first bytes already in `head`) into the store under `<taskId>/<index>.<ext>`. `signal`:
   * the item's deadline, which also ends a write the store itself stalls on.
   */
  async function store({ input, index, m, expiresAtS }: Item, head: Buffer, rest?: AsyncIterable<Buffer>, signal?: AbortSignal): Promise<Kept> {
    const type = checkType(input, m, head);
    const key = `${input.taskId}/${index}.${type.ext}`;
    const cap = max[m.kind];
    let seen = head.length;
    async function* bytes(): AsyncGenerator<Buffer> {
      yield head;
      if (!rest) return;
      for await (const chunk of rest) {
        seen += chunk.length;
        // Mid-stream: a vendor that sends no length (or lies about it) is cut off at the cap.
        if (seen > cap) throw new TooLarge();
        yield chunk;
      }
    }
    const body = Readable.from(bytes(), { objectMode: false });
    const onAbort = (): void => void body.destroy(new Error('result keep timed out'));
    signal?.addEventListener('abort', onAbort, { once: true });
    const { bytes: stored } = await opts.store.put(key, body, { contentType: type.mime }).finally(() => signal?.removeEventListener('abort', onAbort));
    resultStoreBytes.inc({ kind: m.kind }, stored);
    const size = type.kind === 'image' ? readImageHeader(head) : undefined;
    return { url: opts.links.url(key, expiresAtS), type, width: size?.width, height: size?.height };
  }

  async function keepBase64(item: Item, data: string): Promise<Kept> {
    const buf = decodeBase64(data, max[item.m.kind]);
    return withStoreErrors(
      () => store(item, buf),
      () => undefined,
    );
  }

  async function keepUrl(item: Item, src: { url: string; headers?: Record<string, string> }): Promise<Kept> {
    const { input, m } = item;
    const labels = { channel: input.channel.name, operation: 'download' };
    const end = upstreamDuration.startTimer(labels);
    const ac = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, timeoutMs);
    let sourceError: unknown;
    try {
      let dl: OpenDownload;
      try {
        // a channel behind a proxy downloads through it (only the proxy: a connect timeout alone keeps the
        // downloader's own dispatchers, whose public one refuses private addresses when connecting)
        const via = input.channel.settings.proxy === undefined ? undefined : channelDispatcher({ proxy: input.channel.settings.proxy });
        dl = await downloader.open(src.url, src.headers ?? {}, new URL(input.channel.baseUrl).host, ac.signal, via);
      } catch (e) {
        throw downloadFailure(e, timedOut);
      }
      if (dl.declaredBytes !== undefined && dl.declaredBytes > max[m.kind]) {
        discard(dl.body);
        throw tooLarge(m, max[m.kind]);
      }
      const it = dl.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      // The rest of the body, its failures remembered: they are the download's, not the store's.
      const rest: AsyncIterable<Buffer> = {
        [Symbol.asyncIterator]: () => ({
          next: () =>
            it.next().catch((e: unknown) => {
              sourceError = e;
              throw e;
            }),
          return: async () => (await it.return?.()) ?? { done: true, value: undefined },
        }),
      };
      const head = await readHead(rest, m.kind === 'image' ? IMAGE_HEAD_BYTES : SNIFF_BYTES).catch((e: unknown) => {
        throw downloadFailure(e, timedOut);
      });
      if (head.length > max[m.kind]) throw tooLarge(m, max[m.kind]);
      const kept = await withStoreErrors(
        () => store(item, head, rest, ac.signal),
        (e) => (e instanceof TooLarge ? tooLarge(m, max[m.kind]) : sourceError !== undefined || timedOut ? downloadFailure(sourceError, timedOut) : undefined),
      ).finally(() => discard(dl.body));
      upstreamRequests.inc({ ...labels, outcome: 'ok' });
      return kept;
    } catch (e) {
      upstreamRequests.inc({ ...labels, outcome: e instanceof UpstreamError ? e.kind : 'error' });
      throw e;
    } finally {
      clearTimeout(timer);
      end();
    }
  }

  return {
    async keep(input) {
      if (!isResultKey(`${input.taskId}/0.png`)) throw new Error(`task id ${input.taskId} cannot name a result key`);
      const expiresAtS = Math.floor(now() / 1000) + ttl;
      const images: ImageResult[] = [];
      const videos: VideoResult[] = [];
      // One file at a time: a task's files share one bound on sockets, memory and the store's write rate.
      for (const [index, m] of input.media.entries()) {
        const item = { input, index, m, expiresAtS };
        const kept = 'base64' in m.source ? await keepBase64(item, m.source.base64) : await keepUrl(item, m.source);
        if (m.kind === 'image') {
          images.push({ url: kept.url, width: m.width ?? kept.width, height: m.height ?? kept.height, format: kept.type.format });
        } else {
          const duration = m.durationSeconds;
          videos.push({ url: [kept.url], expires_at: expiresAtS, ...(duration !== undefined ? { duration } : {}) });
        }
      }
      return { ...input.result, ...(images.length ? { images } : {}), ...(videos.length ? { videos } : {}) };
    },
    close: () => downloader.close(),
  };
}

/** Closes a body not read to its end (destroy() without a listener would surface undici's abort as an unhandled error). */
const discard = (body: OpenDownload['body']): void => void body.on('error', () => undefined).destroy();

/** The file's type from its first bytes; refused (final) when it is not the kind the vendor said and the task expects. */
function checkType(input: KeepInput, m: UpstreamMedia, head: Buffer): MediaType {
  const type = sniffMediaType(head);
  const want = input.expected.kind === 'images' ? 'image' : input.expected.kind === 'videos' ? 'video' : m.kind;
  if (!type || type.kind !== m.kind || m.kind !== want) {
    const allowed = m.kind === 'image' ? 'jpeg, png, webp or gif' : 'mp4, quicktime or webm';
    throw new UpstreamError(
      `${input.channel.protocol}: the upstream's result is not ${m.kind === 'image' ? 'an image' : 'a video'} (${allowed})`,
      false,
      undefined,
      'bad_request',
    );
  }
  return type;
}

/** Up to `n` bytes from the start of `body` (fewer when it ends first). */
async function readHead(body: AsyncIterable<Buffer>, n: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  const it = body[Symbol.asyncIterator]();
  while (size < n) {
    const r = await it.next();
    if (r.done) break;
    chunks.push(r.value);
    size += r.value.length;
  }
  return Buffer.concat(chunks);
}

/** Runs a store write; a failure the source explains becomes the source's error, any other is the store's (retryable). */
async function withStoreErrors<T>(write: () => Promise<T>, sourceFailure: (e: unknown) => UpstreamError | undefined): Promise<T> {
  try {
    return await write();
  } catch (e) {
    if (e instanceof UpstreamError) throw e;
    throw sourceFailure(e) ?? new UpstreamError(`result store write failed: ${(e as Error).message}`, true, undefined, 'server');
  }
}

const tooLarge = (m: UpstreamMedia, cap: number): UpstreamError =>
  new UpstreamError(`the upstream's ${m.kind} is larger than the result size cap (${cap} bytes)`, false, undefined, 'bad_request');

const DATA_URI = /^data:[a-z0-9.+-]+\/[a-z0-9.+-]+(;[a-z0-9-]+=[^;,]*)*;base64,/i;
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Base64 (standard or URL-safe, optional data-URI prefix) to bytes, refused (final) past the cap before decoding. */
function decodeBase64(value: string, cap: number): Buffer {
  const payload = value.replace(DATA_URI, '').replace(/\s+/g, '');
  if (Math.floor((payload.length * 3) / 4) - 2 > cap) {
    throw new UpstreamError(`the upstream's inline file is larger than the result size cap (${cap} bytes)`, false, undefined, 'bad_request');
  }
  if (payload.length === 0 || !BASE64.test(payload)) throw new UpstreamError("the upstream's inline file is not valid base64", false, undefined, 'bad_request');
  const buf = Buffer.from(payload, /[-_]/.test(payload) ? 'base64url' : 'base64');
  if (buf.length > cap)
    throw new UpstreamError(`the upstream's inline file is larger than the result size cap (${cap} bytes)`, false, undefined, 'bad_request');
  return buf;
}
