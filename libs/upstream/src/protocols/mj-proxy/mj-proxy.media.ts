import { UpstreamError } from '@gmg/errors';
import type { ChannelTarget, UpstreamMedia } from '../../adapter';
import { createDownloader, downloadFailure, type HostCheck } from '../../results/media-download';
import { sniffMediaType } from '../../results/media-type';

/** Largest image a request hands the proxy as Base64 (a mask, a blend or describe input). */
const MAX_INPUT_BYTES = 10 * 1024 * 1024;
/** Largest grid read to cut its tiles (a Midjourney grid is a few MiB). */
const MAX_GRID_BYTES = 50 * 1024 * 1024;

/**
 * Cuts an image into its four quadrants (top-left, top-right, bottom-left, bottom-right) as PNG bytes; throws when the
 * bytes are not an image. Given by the art worker (services/worker-artgen: sharp), the one process that polls the
 * art suite's tasks: the other processes, and the production image's other services, carry no image library.
 */
export type QuadrantCutter = (image: Buffer) => Promise<{ tiles: Buffer[]; width: number; height: number }>;

export interface MjMedia {
  /** A request's image as the data URI the proxy takes: inline values pass, links are downloaded (public hosts only). */
  dataUri(ch: ChannelTarget, value: string, field: string): Promise<string>;
  /**
   * A grid of four without tile links (the Java proxy shows `imageUrl` only): the grid read (its own host trusted as
   * the channel is, any other public) and cut into its four quadrants, all kept as inline PNG bytes.
   */
  cutGrid(ch: ChannelTarget, gridUrl: string): Promise<{ tiles: UpstreamMedia[]; grid: UpstreamMedia; width: number; height: number }>;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export function createMjMedia(opts: { publicHosts: HostCheck; timeoutMs: number; cutQuadrants?: QuadrantCutter }): MjMedia {
  const downloader = createDownloader({ publicHosts: opts.publicHosts, timeoutMs: opts.timeoutMs, userAgent: 'gmg-mj-proxy-adapter/1' });

  async function bytesOf(url: string, trustedHost: string, maxBytes: number, what: string): Promise<Buffer> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), opts.timeoutMs);
    let timedOut = false;
    abort.signal.addEventListener('abort', () => (timedOut = true));
    try {
      const dl = await downloader.open(url, {}, trustedHost, abort.signal);
      if (dl.declaredBytes !== undefined && dl.declaredBytes > maxBytes) {
        void dl.body.on('error', () => undefined).destroy();
        throw new UpstreamError(`${what} is larger than ${maxBytes} bytes`, false, undefined, 'bad_request');
      }
      const chunks: Buffer[] = [];
      let total = 0;
      for await (const chunk of dl.body) {
        total += (chunk as Buffer).length;
        if (total > maxBytes) {
          void dl.body.on('error', () => undefined).destroy();
          throw new UpstreamError(`${what} is larger than ${maxBytes} bytes`, false, undefined, 'bad_request');
        }
        chunks.push(chunk as Buffer);
      }
      return Buffer.concat(chunks);
    } catch (e) {
      throw downloadFailure(e, timedOut);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    async dataUri(_ch, value, field) {
      if (value.startsWith('data:')) return value;
      if (!/^https?:\/\//i.test(value)) {
        // bare Base64: its type from its first bytes
        const compact = value.replace(/\s+/g, '');
        const head = BASE64.test(compact) ? Buffer.from(compact.slice(0, 96), 'base64') : Buffer.alloc(0);
        const type = sniffMediaType(head);
        if (type?.kind !== 'image') throw new UpstreamError(`mj-proxy: \`${field}\` is not an image`, false, undefined, 'bad_request');
        return `data:${type.mime};base64,${compact}`;
      }
      // A request's link is never the channel's: no host is trusted.
      const bytes = await bytesOf(value, '', MAX_INPUT_BYTES, `\`${field}\``);
      const type = sniffMediaType(bytes.subarray(0, 64));
      if (type?.kind !== 'image') throw new UpstreamError(`mj-proxy: \`${field}\` is not an image`, false, undefined, 'bad_request');
      return `data:${type.mime};base64,${bytes.toString('base64')}`;
    },

    async cutGrid(ch, gridUrl) {
      const cut = opts.cutQuadrants;
      if (!cut) {
        throw new UpstreamError(
          "mj-proxy: the proxy shows a grid without tile links, and this process has no image library to cut it (only the art worker's does)",
          false,
          undefined,
          'server',
        );
      }
      const bytes = await bytesOf(gridUrl, new URL(ch.baseUrl).host, MAX_GRID_BYTES, "the proxy's grid image");
      let quadrants: Awaited<ReturnType<QuadrantCutter>>;
      try {
        quadrants = await cut(bytes);
      } catch {
        throw new UpstreamError("mj-proxy: the proxy's grid is not an image", false, undefined, 'bad_request');
      }
      const { width: w, height: h } = quadrants;
      if (w < 1 || h < 1) throw new UpstreamError("mj-proxy: the proxy's grid is too small to cut", false, undefined, 'bad_request');
      const tiles: UpstreamMedia[] = quadrants.tiles.map((tile) => ({ kind: 'image', source: { base64: tile.toString('base64') }, width: w, height: h }));
      return { tiles, grid: { kind: 'image', source: { base64: bytes.toString('base64') } }, width: w, height: h };
    },
  };
}
