import type { Request, Response } from 'express';
import { newVendorTask, expiringFileUrl, rateLimitedOnce, renderImageBytes, type VendorSimContext } from '../vendor-sim-kit';
import {
  OpenAiRefusal,
  intIn,
  quote,
  isImageUrl,
  onlyKnown,
  oneOf,
  readBody,
  refuse,
  requiredPrompt,
  sendOpenAiError,
  type OpenAiBody,
} from './openai-sim.shared';

/**
 * `POST /v1/images/generations` and `/v1/images/edits`, strict as openai-node's images.ts documents them
 * (ImageGenerateParams, ImageEditParams) and the JSON edit body of OpenAI's OpenAPI document (`images: [{image_url} |
 * {file_id}]`, GPT image models only). Synchronous: the answer is the finished images.
 */
const GPT_IMAGE = ['gpt-image-1', 'gpt-image-1-mini', 'gpt-image-1.5', 'gpt-image-2', 'gpt-image-2-2026-04-21', 'chatgpt-image-latest'];
const FREE_SIZE = ['gpt-image-2', 'gpt-image-2-2026-04-21'];
const STANDARD_SIZES = ['1024x1024', '1536x1024', '1024x1536', 'auto'];
const DALLE_SIZES: Record<string, string[]> = { 'dall-e-2': ['256x256', '512x512', '1024x1024'], 'dall-e-3': ['1024x1024', '1792x1024', '1024x1792'] };
const GPT_ONLY = ['output_format', 'output_compression', 'background', 'moderation', 'partial_images', 'stream'];
const COMMON = ['prompt', 'model', 'n', 'size', 'quality', 'user'];
const GENERATE_PARAMS = [...COMMON, ...GPT_ONLY, 'response_format', 'style'];
const EDIT_JSON_PARAMS = [...COMMON, ...GPT_ONLY, 'images', 'mask', 'input_fidelity'];
const EDIT_FORM_PARAMS = [...COMMON, ...GPT_ONLY, 'image', 'mask', 'input_fidelity', 'response_format'];
/** OpenAI's links of dall-e answers live 60 minutes (ImageGenerateParams.response_format). */
const URL_TTL_MS = 60 * 60 * 1000;

interface ImageCall {
  model: string;
  prompt: string;
  n: number;
  width: number;
  height: number;
  format: 'png' | 'jpeg' | 'webp';
  asUrl: boolean;
  quality: string;
  background: string;
}

export function imagesHandler(ctx: VendorSimContext, kind: 'generations' | 'edits') {
  return async (req: Request, res: Response): Promise<void> => {
    const { form, body } = await readBody(req);
    const call = kind === 'generations' ? validateGenerate(body) : validateEdit(body, form);
    if (rateLimitedOnce(call.prompt)) {
      res.setHeader('Retry-After', '1');
      return sendOpenAiError(res, 429, 'Rate limit reached for images per minute. Please try again in 1s.', null, 'rate_limit_exceeded', 'requests');
    }
    const task = newVendorTask(ctx, call.model, { kind: 'images', count: call.n, width: call.width, height: call.height, format: call.format }, call.prompt);
    if (task.markers.outcome === 'moderation') {
      // type: as OpenAI answers gpt-image refusals (guess from public reports); code: documented word
      return sendOpenAiError(res, 400, 'Your request was rejected by the safety system.', null, 'moderation_blocked', 'image_generation_user_error');
    }
    if (task.markers.outcome === 'fail') return sendOpenAiError(res, 500, 'The server had an error while processing your request.', null, null, 'server_error');
    // the call lasts as long as the generation (on the simulator's clock)
    await new Promise((r) => setTimeout(r, Math.min(task.durationMs, 600_000)));
    const data = await Promise.all(
      Array.from({ length: call.n }, async (_, i) =>
        call.asUrl ? { url: expiringFileUrl(ctx, task, i, ctx.now() + URL_TTL_MS) } : { b64_json: (await renderImageBytes(ctx, task, i)).toString('base64') },
      ),
    );
    const gpt = GPT_IMAGE.includes(call.model);
    res.json({
      created: Math.floor(ctx.now() / 1000),
      data,
      ...(gpt
        ? {
            background: call.background === 'transparent' ? 'transparent' : 'opaque',
            output_format: call.format,
            quality: call.quality === 'auto' ? 'medium' : call.quality,
            size: `${call.width}x${call.height}`,
            usage: {
              input_tokens: 20,
              input_tokens_details: { image_tokens: 0, text_tokens: 20 },
              output_tokens: 1056 * call.n,
              total_tokens: 20 + 1056 * call.n,
            },
          }
        : {}),
    });
  };
}

function knownModel(v: unknown, fallback: string): string {
  const model = v === undefined || v === null ? fallback : v;
  if (typeof model !== 'string' || !(GPT_IMAGE.includes(model) || model in DALLE_SIZES)) {
    // OpenAI answers an unknown model with 404 model_not_found (as on its other endpoints)
    throw new OpenAiRefusal(404, `The model \`${quote(model)}\` does not exist or you do not have access to it.`, 'model', 'model_not_found');
  }
  return model;
}

function validateGenerate(body: OpenAiBody): ImageCall {
  onlyKnown(body, GENERATE_PARAMS);
  // dall-e-2 is the documented default model
  const model = knownModel(body.model, 'dall-e-2');
  const gpt = GPT_IMAGE.includes(model);
  if (!gpt) for (const p of GPT_ONLY) if (body[p] !== undefined) refuse(p, 'unknown_parameter', `Unknown parameter: '${p}'.`);
  if (gpt && body.response_format !== undefined) refuse('response_format', 'unknown_parameter', "Unknown parameter: 'response_format'.");
  if (body.style !== undefined && model !== 'dall-e-3') refuse('style', 'unknown_parameter', "Unknown parameter: 'style'.");
  oneOf(body, 'style', ['vivid', 'natural']);
  const prompt = requiredPrompt(body, gpt ? 32000 : model === 'dall-e-3' ? 4000 : 1000);
  return common(body, model, prompt, false);
}

function validateEdit(body: OpenAiBody, form: boolean): ImageCall {
  onlyKnown(body, form ? EDIT_FORM_PARAMS : EDIT_JSON_PARAMS);
  // the edit endpoint defaults to gpt-image-1.5 (ImageEditParams.model)
  const model = knownModel(body.model, 'gpt-image-1.5');
  const gpt = GPT_IMAGE.includes(model);
  if (model === 'dall-e-3') refuse('model', 'invalid_value', "Invalid value: 'dall-e-3'. Image edits support the GPT image models and dall-e-2.");
  if (!form && !gpt) refuse('model', 'invalid_value', 'JSON image edits support the GPT image models only; use multipart/form-data for dall-e-2.');
  if (!gpt) for (const p of [...GPT_ONLY, 'input_fidelity']) if (body[p] !== undefined) refuse(p, 'unknown_parameter', `Unknown parameter: '${p}'.`);
  const refs = form ? body.image : body.images;
  const list = Array.isArray(refs) ? refs : refs === undefined ? [] : [refs];
  const param = form ? 'image' : 'images';
  if (list.length === 0) refuse(param, 'missing_required_parameter', `Missing required parameter: '${param}'.`);
  if (list.length > (gpt ? 16 : 1)) refuse(param, 'invalid_value', `Invalid '${param}': at most ${gpt ? 16 : 1} image(s) for ${model}.`);
  const check = form ? checkFile : checkRef;
  list.forEach((r, i) => check(r, `${param}[${i}]`));
  if (body.mask !== undefined) check(body.mask, 'mask');
  oneOf(body, 'input_fidelity', ['high', 'low']);
  const prompt = requiredPrompt(body, gpt ? 32000 : 1000);
  return common(body, model, prompt, form);
}

/** `{image_url}` or `{file_id}`, exactly one (ImageRefParam). */
function checkRef(r: unknown, param: string): void {
  const o = typeof r === 'object' && r !== null && !Array.isArray(r) ? (r as Record<string, unknown>) : undefined;
  const keys = o ? Object.keys(o) : [];
  if (!o || keys.length !== 1 || !(keys[0] === 'image_url' || keys[0] === 'file_id')) {
    refuse(param, 'invalid_value', `Invalid '${param}': provide exactly one of 'image_url' or 'file_id'.`);
  }
  if (o!.image_url !== undefined && !isImageUrl(o!.image_url))
    refuse(param, 'invalid_value', `Invalid '${param}.image_url': expected a URL or a base64 data URL.`);
}

function checkFile(r: unknown, param: string): void {
  const f = r as { file?: boolean; type?: string } | undefined;
  if (!f?.file || !/^image\/(png|jpeg|webp)$/.test(f.type ?? ''))
    refuse(param, 'invalid_image_format', `Invalid '${param}': expected a png, jpeg or webp file.`);
}

/** n, size, quality, output_format, background, moderation, compression, response_format: shared rules. */
function common(body: OpenAiBody, model: string, prompt: string, form: boolean): ImageCall {
  const gpt = GPT_IMAGE.includes(model);
  const n = intIn(body, 'n', 1, model === 'dall-e-3' ? 1 : 10, form) ?? 1;
  const { width, height } = sizeFor(body, model);
  oneOf(body, 'quality', gpt ? ['low', 'medium', 'high', 'auto'] : model === 'dall-e-3' ? ['standard', 'hd', 'auto'] : ['standard', 'auto']);
  oneOf(body, 'output_format', ['png', 'jpeg', 'webp']);
  oneOf(body, 'background', ['transparent', 'opaque', 'auto']);
  oneOf(body, 'moderation', ['low', 'auto']);
  oneOf(body, 'response_format', ['url', 'b64_json']);
  intIn(body, 'output_compression', 0, 100, form);
  intIn(body, 'partial_images', 0, 3, form);
  if (body.stream === true || body.stream === 'true') refuse('stream', 'invalid_value', 'Streaming is not available in this simulator.');
  if (body.background === 'transparent' && body.output_format === 'jpeg')
    refuse('background', 'invalid_value', 'Transparent backgrounds need png or webp output.');
  const format = (typeof body.output_format === 'string' ? body.output_format : 'png') as ImageCall['format'];
  // dall-e answers links unless b64_json is asked (ImageGenerateParams.response_format); GPT models always base64
  const asUrl = !gpt && body.response_format !== 'b64_json';
  const quality = typeof body.quality === 'string' ? body.quality : 'auto';
  return { model, prompt, n, width, height, format, asUrl, quality, background: typeof body.background === 'string' ? body.background : 'auto' };
}

function sizeFor(body: OpenAiBody, model: string): { width: number; height: number } {
  const allowed = DALLE_SIZES[model];
  // dall-e's default is 1024x1024; the GPT image models' is auto
  const v = body.size ?? (allowed ? '1024x1024' : 'auto');
  if (typeof v !== 'string') return refuse('size', 'invalid_type', "Invalid type for 'size': expected a string.");
  if (allowed && !allowed.includes(v))
    refuse('size', 'invalid_value', `Invalid value: '${v}'. Supported values are: ${allowed.map((s) => `'${s}'`).join(', ')}.`);
  if (!allowed && !FREE_SIZE.includes(model) && !STANDARD_SIZES.includes(v)) {
    refuse('size', 'invalid_value', `Invalid value: '${v}'. Supported values are: ${STANDARD_SIZES.map((s) => `'${s}'`).join(', ')}.`);
  }
  if (v === 'auto') return { width: 1024, height: 1024 };
  const m = /^(\d{2,5})x(\d{2,5})$/.exec(v);
  if (!m) return refuse('size', 'invalid_value', `Invalid value: '${v}'. Expected 'auto' or WIDTHxHEIGHT.`);
  const [w, h] = [Number(m[1]), Number(m[2])];
  // gpt-image-2: multiples of 16, ratio within 1:3..3:1, at most 3840x2160 (ImageGenerateParams.size)
  if (FREE_SIZE.includes(model) && !(w % 16 === 0 && h % 16 === 0 && Math.max(w, h) <= 3840 && w * h <= 3840 * 2160 && Math.max(w, h) / Math.min(w, h) <= 3)) {
    refuse('size', 'invalid_value', `Invalid value: '${v}'. Width and height must be multiples of 16, the ratio within 1:3 and 3:1, at most 3840x2160.`);
  }
  return { width: w, height: h };
}
