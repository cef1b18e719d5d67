import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LRUCache } from 'lru-cache';
import { RenderCache } from './render-cache';

export const MAX_VIDEO_SECONDS = 60;

/** The ffmpeg binary shipped inside the @ffmpeg-installer registry package, or undefined on an unsupported platform. */
export function bundledFfmpegPath(): string | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, inside the try: an import would throw at start on a platform the package does not ship
    return (require('@ffmpeg-installer/ffmpeg') as { path: string }).path;
  } catch {
    return undefined;
  }
}

export interface VideoRendererOptions {
  ffmpegPath?: string;
  /** Clips kept in memory. A 10 s clip is ~50 KB. Default 64. */
  maxCached?: number;
  width?: number;
  height?: number;
  fps?: number;
}

/**
 * Real, browser-playable MP4 clips (H.264 baseline, yuv420p, moov atom first) of an exact duration: a small
 * ffmpeg test pattern, rendered once per duration and cached, concurrent requests sharing one render.
 */
export class VideoRenderer {
  private readonly cache: RenderCache;
  private readonly ffmpeg: string | undefined;
  private readonly w: number;
  private readonly h: number;
  private readonly fps: number;

  constructor(opts: VideoRendererOptions = {}) {
    this.ffmpeg = opts.ffmpegPath ?? bundledFfmpegPath();
    this.cache = new RenderCache(new LRUCache<string, Buffer>({ max: opts.maxCached ?? 64 }));
    this.w = opts.width ?? 160;
    this.h = opts.height ?? 90;
    this.fps = opts.fps ?? 8;
  }

  get available(): boolean {
    return this.ffmpeg !== undefined;
  }

  render(seconds: number): Promise<Buffer> {
    if (!(seconds > 0 && seconds <= MAX_VIDEO_SECONDS)) return Promise.reject(new RangeError(`video duration ${seconds}s out of range`));
    // Whole frames only, so the container duration is exactly frames / fps.
    const frames = Math.max(1, Math.round(seconds * this.fps));
    return this.cache.get(String(frames), () => this.encode(frames));
  }

  private async encode(frames: number): Promise<Buffer> {
    if (!this.ffmpeg) throw new Error('no ffmpeg binary for this platform');
    const dir = await mkdtemp(path.join(tmpdir(), 'gmg-sim-'));
    const out = path.join(dir, 'clip.mp4');
    try {
      const args = [
        '-hide_banner',
        '-loglevel',
        'error',
        '-y',
        '-f',
        'lavfi',
        '-i',
        `testsrc2=size=${this.w}x${this.h}:rate=${this.fps}`,
        '-frames:v',
        String(frames),
        '-c:v',
        'libx264',
        '-profile:v',
        'baseline',
        '-level',
        '3.0',
        '-pix_fmt',
        'yuv420p',
        '-preset',
        'ultrafast',
        '-movflags',
        '+faststart',
        '-an',
        out,
      ];
      await new Promise<void>((resolve, reject) => {
        execFile(this.ffmpeg!, args, { timeout: 60_000 }, (err, _stdout, stderr) =>
          err ? reject(new Error(`ffmpeg failed: ${String(stderr).slice(0, 500) || err.message}`)) : resolve(),
        );
      });
      return await readFile(out);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
