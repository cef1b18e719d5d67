import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { ExpectedOutput } from '@gmg/contracts';
import type { Logger } from '@gmg/logger';
import { normalizeImageFormat, type ImageRenderer } from '../media/image-renderer';
import { durationMs, parseMarkers, type SimMarkers } from '../sim-scenario';
import { newTaskId, type SimTask, type SimTaskStore } from '../sim-task.store';
import { imageFileName, simStateAt, videoFileName } from '../task-view';

/**
 * What every vendor mode of the simulator shares (issue 34: the simulator speaks each vendor protocol under its own
 * path prefix): the task store and clock, result files whose links expire as the vendor's do, rendered bytes for
 * vendors that answer base64, and the prompt markers (sim-scenario.ts) that choose an outcome.
 */
export interface VendorSimContext {
  /** The simulator's own base address (no trailing slash): vendor links point here. */
  publicUrl: string;
  /** The key every vendor mode expects, each in its vendor's own header; undefined: any non-empty key passes. */
  apiKey?: string;
  timeScale: number;
  now: () => number;
  log: Logger;
  store: SimTaskStore;
  images: ImageRenderer;
  /** SIM_VENDOR_LINK_TTL_MS: every vendor link expires this long after it was made (e2e tests see expiry in seconds). */
  linkTtlMs?: number;
}

/** A task of a vendor mode: the simulator's task plus what the vendor needs to answer polls. */
export function newVendorTask(
  ctx: VendorSimContext,
  model: string,
  expected: ExpectedOutput,
  prompt: unknown,
  estimatedSeconds = 0,
): SimTask & { markers: SimMarkers } {
  const markers = parseMarkers(prompt);
  const task = {
    id: newTaskId(),
    model,
    ack: 'A' as const,
    expected,
    outcome: markers.outcome,
    startedAt: ctx.now(),
    durationMs: durationMs(expected.kind, estimatedSeconds, markers, ctx.timeScale),
    markers,
    // `[sim:slowfile]`: its result files take SLOW_FILE_MS to start arriving (a download a test can kill a worker in)
    slowFile: typeof prompt === 'string' && prompt.includes('[sim:slowfile]'),
  };
  ctx.store.add(task);
  return task;
}

export type VendorTask = SimTask & { markers: SimMarkers; slowFile?: boolean };
const SLOW_FILE_MS = 4000;

/**
 * A result link that stops working at `expiresAtMs` (GET answers 403 after it, like a signed CDN link), e.g. FLUX's
 * `result.sample` (10 minutes) or Replicate's output files (1 hour). Served by `expiringFilesHandler`.
 */
export function expiringFileUrl(ctx: VendorSimContext, task: SimTask, index: number, expiresAtMs: number): string {
  if (ctx.linkTtlMs !== undefined) expiresAtMs = ctx.now() + ctx.linkTtlMs;
  const name = task.expected.kind === 'videos' ? videoFileName(task, index) : imageFileName(task, index);
  return `${ctx.publicUrl}/vendor-files/${Math.floor(expiresAtMs / 1000)}/${name}`;
}

/**
 * GET /vendor-files/:exp/:name: 403 once the link expired, else the file `/files/:name` serves (after SLOW_FILE_MS
 * for a `[sim:slowfile]` task's file).
 */
export function expiringFilesHandler(now: () => number, files: RequestHandler, store: SimTaskStore): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const exp = Number(req.params.exp);
    if (!Number.isInteger(exp) || now() >= exp * 1000) {
      res.status(403).json({ error: 'Request has expired', code: 'AccessDenied' });
      return;
    }
    const task = store.get(String(req.params.name).split('-')[0]) as VendorTask | undefined;
    if (!task?.slowFile) return files(req, res, next);
    const timer = setTimeout(() => void files(req, res, next), SLOW_FILE_MS);
    res.on('close', () => clearTimeout(timer));
  };
}

/** The bytes of a task's image (vendors that answer `b64_json`). */
export async function renderImageBytes(ctx: VendorSimContext, task: SimTask, index: number): Promise<Buffer> {
  const w = task.expected.width ?? 1024;
  const h = task.expected.height ?? 1024;
  return ctx.images.render(`palette-${index % 8}`, w, h, normalizeImageFormat(task.expected.format));
}

/**
 * The vendor's auth header check: `read(req)` extracts the key as the vendor sends it; a missing or wrong one is
 * answered by `refuse` (each vendor's own 401 shape).
 */
export function vendorAuth(ctx: Pick<VendorSimContext, 'apiKey'>, read: (req: Request) => string | undefined, refuse: (res: Response) => void): RequestHandler {
  return (req, res, next) => {
    const key = read(req);
    if (!key || (ctx.apiKey !== undefined && key !== ctx.apiKey)) return refuse(res);
    next();
  };
}

const seenOnce = new Set<string>();
/**
 * `[sim:429once]` in the prompt: the first submit of that prompt answers 429 with `Retry-After: 1` (a vendor's rate
 * limit), the next one is accepted. Bounded memory: the set forgets everything past 10,000 prompts.
 */
export function rateLimitedOnce(prompt: unknown): boolean {
  const p = typeof prompt === 'string' ? prompt : '';
  if (!p.includes('[sim:429once]')) return false;
  if (seenOnce.has(p)) return false;
  if (seenOnce.size > 10_000) seenOnce.clear();
  seenOnce.add(p);
  return true;
}

/** One request a vendor mode received, as the vendor saw it (e2e tests check paths, auth headers and bodies). */
export interface SeenVendorRequest {
  /** When the request was recorded: vendor calls when answered, result file downloads when they start. */
  phase: 'answered' | 'started';
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/**
 * Remembers the last `max` requests to the vendor modes (GET /__sim/vendor-requests answers them, newest last): the
 * simulator is a test tool, and "the request the vendor saw" is what a translation test checks.
 */
export function vendorRequestLog(max = 500): { record: RequestHandler; recordStart: RequestHandler; list: RequestHandler } {
  const seen: SeenVendorRequest[] = [];
  const push = (r: SeenVendorRequest) => {
    seen.push(r);
    if (seen.length > max) seen.splice(0, seen.length - max);
  };
  return {
    record: (req, res, next) => {
      res.on('finish', () => push({ phase: 'answered', method: req.method, path: req.originalUrl, headers: { ...req.headers }, body: req.body as unknown }));
      next();
    },
    recordStart: (req, _res, next) => {
      push({ phase: 'started', method: req.method, path: req.originalUrl, headers: { ...req.headers }, body: undefined });
      next();
    },
    list: (_req, res) => {
      res.json({ requests: seen });
    },
  };
}

/** A callback URL as the vendors take one: absolute http(s), at most 2,048 characters (guess: a common URL cap). */
export function isCallbackUrl(v: unknown): v is string {
  if (typeof v !== 'string' || v.length > 2048) return false;
  try {
    const u = new URL(v);
    return u.protocol === 'https:' || u.protocol === 'http:';
  } catch {
    return false;
  }
}

/** Callbacks waiting for their task to end (all vendor modes): bounded, each cleared when it fires. */
const pendingCallbacks = new Map<string, NodeJS.Timeout>();
const MAX_PENDING_CALLBACKS = 20_000;
const CALLBACK_TIMEOUT_MS = 5000;

/**
 * A vendor's callback (fal and Replicate webhooks, Kling's and Ark's `callback_url`; issue 35 item 8): when `task`
 * ends on the simulator's clock (success or failure; a `[sim:never]` task never calls), POST `body()` — the vendor's
 * own payload shape, read at that moment — to `url`, once, fire-and-forget with a timeout. Timers are unref'd and
 * bounded (past MAX_PENDING_CALLBACKS a new one is dropped, as a vendor losing a callback: the gateway's safety-net
 * poll finds the task); `clearVendorCallbacks` stops them all.
 */
export function scheduleVendorCallback(ctx: Pick<VendorSimContext, 'now' | 'log'>, task: SimTask, url: string, body: () => unknown): void {
  const endedAt = simStateAt(task, Number.MAX_SAFE_INTEGER).endedAt;
  if (endedAt === undefined || pendingCallbacks.size >= MAX_PENDING_CALLBACKS) return;
  const key = `${task.id} ${url}`;
  clearTimeout(pendingCallbacks.get(key));
  const timer = setTimeout(
    () => {
      pendingCallbacks.delete(key);
      void fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body()),
        signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS),
      })
        .then((r) => ctx.log.info({ taskId: task.id, status: r.status }, 'vendor sim callback sent'))
        .catch((err: unknown) => ctx.log.warn({ taskId: task.id, err: (err as Error).message }, 'vendor sim callback failed'));
    },
    // a few ms past the end, so the vendor's own answer already says it ended
    Math.max(0, endedAt - ctx.now()) + 5,
  );
  timer.unref();
  pendingCallbacks.set(key, timer);
}

/** Stops every pending callback (the simulator closing; tests). */
export function clearVendorCallbacks(): void {
  for (const t of pendingCallbacks.values()) clearTimeout(t);
  pendingCallbacks.clear();
}
