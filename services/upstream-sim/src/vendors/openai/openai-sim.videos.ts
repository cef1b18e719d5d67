import type { Request, Response } from 'express';
import { VideoRenderer } from '../../media/video-renderer';
import { SIM_FAIL_MESSAGE } from '../../sim-scenario';
import type { SimTask } from '../../sim-task.store';
import { simStateAt } from '../../task-view';
import { newVendorTask, rateLimitedOnce, type VendorSimContext } from '../vendor-sim-kit';
import { isImageUrl, quote, onlyKnown, oneOf, readBody, refuse, requiredPrompt, sendOpenAiError, type OpenAiBody } from './openai-sim.shared';

/**
 * The `/v1/videos` job (openai-node videos.ts: VideoCreateParams, Video, VideoDeleteResponse; the JSON body of
 * OpenAI's OpenAPI document, CreateVideoJsonBody, with `input_reference: {image_url} | {file_id}`), on the
 * simulator's clock. The MP4 at `/content` needs the key like every call here (OpenAI: bearerAuth on the download).
 */
const MODELS = ['sora-2', 'sora-2-pro', 'sora-2-2025-10-06', 'sora-2-pro-2025-10-06', 'sora-2-2025-12-08'];
const SECONDS = ['4', '8', '12'];
const SIZES = ['720x1280', '1280x720', '1024x1792', '1792x1024'];
/** sora-2 renders 720p only; the 1024x1792 frames are sora-2-pro's (OpenAI's video guide; guess for the exact refusal). */
const PRO_SIZES = ['1024x1792', '1792x1024'];
/** How long `/content` serves a finished video (guess: about an hour, as OpenAI's links; SIM_VENDOR_LINK_TTL_MS overrides). */
const CONTENT_TTL_MS = 60 * 60 * 1000;

interface SoraJob {
  seconds: string;
  size: string;
  prompt: string;
  deleted?: boolean;
}
type SoraTask = SimTask & { sora?: SoraJob };

const videoId = (task: SimTask): string => `video_${task.id.slice('task_'.length)}`;

export function videosRoutes(ctx: VendorSimContext) {
  let renderer: VideoRenderer | undefined;
  const find = (res: Response, id: string): SoraTask | undefined => {
    const task = id.startsWith('video_') ? (ctx.store.get(`task_${id.slice('video_'.length)}`) as SoraTask | undefined) : undefined;
    if (task?.sora && !task.sora.deleted) return task;
    sendOpenAiError(res, 404, `Video with id '${id}' not found.`, null, 'video_not_found');
    return undefined;
  };

  return {
    create: async (req: Request, res: Response): Promise<void> => {
      const { form, body } = await readBody(req);
      const job = validateCreate(body, form);
      if (rateLimitedOnce(job.prompt)) {
        res.setHeader('Retry-After', '1');
        return sendOpenAiError(res, 429, 'Rate limit reached for videos per minute. Please try again in 1s.', null, 'rate_limit_exceeded', 'requests');
      }
      const [w, h] = job.size.split('x').map(Number);
      const expected = { kind: 'videos' as const, count: 1, width: w, height: h, durationSeconds: Number(job.seconds), format: 'mp4' };
      const task: SoraTask = newVendorTask(ctx, job.model, expected, job.prompt, 120);
      task.sora = { seconds: job.seconds, size: job.size, prompt: job.prompt };
      res.json(view(task, ctx.now(), ctx.linkTtlMs ?? CONTENT_TTL_MS));
    },
    get: (req: Request, res: Response): void => {
      const task = find(res, String(req.params.id));
      if (task) res.json(view(task, ctx.now(), ctx.linkTtlMs ?? CONTENT_TTL_MS));
    },
    content: async (req: Request, res: Response): Promise<void> => {
      const task = find(res, String(req.params.id));
      if (!task) return;
      if (req.query.variant !== undefined && req.query.variant !== 'video')
        return sendOpenAiError(res, 400, 'Only the video variant is simulated.', 'variant', 'invalid_value');
      const v = view(task, ctx.now(), ctx.linkTtlMs ?? CONTENT_TTL_MS);
      if (v.status !== 'completed') return sendOpenAiError(res, 404, 'Video is not ready yet; poll until it completes.', null, 'video_not_ready');
      if (ctx.now() >= (v.expires_at as number) * 1000) return sendOpenAiError(res, 404, 'Video content has expired.', null, 'video_expired');
      renderer ??= new VideoRenderer();
      if (!renderer.available) return sendOpenAiError(res, 503, 'video rendering is not available on this platform', null, null, 'server_error');
      res.setHeader('Content-Type', 'video/mp4');
      res.send(await renderer.render(Number(task.sora!.seconds)));
    },
    /** DELETE: OpenAI documents it for completed or failed videos; an open job is stopped and deleted too (guess). */
    remove: (req: Request, res: Response): void => {
      const task = find(res, String(req.params.id));
      if (!task) return;
      task.sora!.deleted = true;
      task.cancelledAt ??= ctx.now();
      res.json({ id: videoId(task), object: 'video.deleted', deleted: true });
    },
  };
}

function validateCreate(body: OpenAiBody, form: boolean): SoraJob & { model: string } {
  onlyKnown(body, ['prompt', 'model', 'seconds', 'size', 'input_reference']);
  const model = body.model ?? 'sora-2';
  if (typeof model !== 'string' || !MODELS.includes(model)) {
    return refuse('model', 'model_not_found', `The model \`${quote(model)}\` does not exist or you do not have access to it.`, 404);
  }
  const prompt = requiredPrompt(body, 32000);
  // `seconds` is a string ("4", "8", "12"): a JSON number is refused (VideoCreateParams.seconds: VideoSeconds)
  oneOf(body, 'seconds', SECONDS);
  oneOf(body, 'size', SIZES);
  const size = (body.size as string | undefined) ?? '720x1280';
  if (PRO_SIZES.includes(size) && !model.startsWith('sora-2-pro'))
    refuse('size', 'invalid_value', `Invalid value: '${size}'. ${model} supports '720x1280' and '1280x720'.`);
  const ref = body.input_reference;
  if (ref !== undefined) {
    const ok = form
      ? (ref as { file?: boolean; type?: string }).file === true && /^image\/(png|jpeg|webp)$/.test((ref as { type?: string }).type ?? '')
      : typeof ref === 'object' &&
        ref !== null &&
        (isImageUrl((ref as { image_url?: unknown }).image_url) || typeof (ref as { file_id?: unknown }).file_id === 'string');
    if (!ok) refuse('input_reference', 'invalid_value', "Invalid 'input_reference': expected an image file, {image_url} or {file_id}.");
  }
  return { model, prompt, seconds: (body.seconds as string | undefined) ?? '4', size };
}

/** The Video object at `now`: statuses queued / in_progress / completed / failed, progress 0..100. */
function view(task: SoraTask, now: number, ttlMs: number): Record<string, unknown> {
  const s = simStateAt(task, now);
  const job = task.sora!;
  const status = s.status === 'pending' ? 'queued' : s.status === 'processing' ? 'in_progress' : s.status;
  const completedAt = s.endedAt !== undefined ? Math.floor(s.endedAt / 1000) : null;
  const error =
    status !== 'failed'
      ? null
      : task.outcome === 'moderation'
        ? { code: 'moderation_blocked', message: 'Your request was blocked by our moderation system.' }
        : { code: 'video_generation_failed', message: SIM_FAIL_MESSAGE };
  return {
    id: videoId(task),
    object: 'video',
    model: task.model,
    status,
    progress: status === 'completed' ? 100 : s.progress,
    created_at: Math.floor(task.startedAt / 1000),
    completed_at: completedAt,
    expires_at: status === 'completed' && s.endedAt !== undefined ? Math.floor((s.endedAt + ttlMs) / 1000) : null,
    error,
    prompt: job.prompt,
    remixed_from_video_id: null,
    seconds: job.seconds,
    size: job.size,
  };
}
