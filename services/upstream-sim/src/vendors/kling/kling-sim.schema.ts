/**
 * The Omni-Video (Kling O1) request as Kling documents it (app.klingai.com dev docs, OmniVideo; the same shapes as
 * ComfyUI's comfy_api_nodes/apis/kling.py). A problem answers HTTP 400 with code 1200 (not an object) or 1201 (a bad
 * value, the field named in `message`). Stricter than Kling on purpose, so a translation that leaks one of our fields
 * or our types fails a test: fields Kling does not list are refused, `duration` must be a string, a `base` video
 * (whose length is the output's) takes no `duration`, and a `data:` URI is not an image.
 */

import { isCallbackUrl } from '../vendor-sim-kit';
import { isObj } from '../../sim-json';

export const KLING_SIM_MODELS = ['kling-video-o1', 'kling-v3-omni'] as const;
const FIELDS = [
  'model_name',
  'prompt',
  'image_list',
  'element_list',
  'video_list',
  'mode',
  'aspect_ratio',
  'duration',
  'watermark_info',
  'callback_url',
  'external_task_id',
];
const RATIOS = ['16:9', '9:16', '1:1'];
const URL_OR_B64 = /^(https?:\/\/\S+|[A-Za-z0-9+/]+={0,2})$/;

const oneOf = (v: unknown, values: readonly string[]) => typeof v === 'string' && values.includes(v);

export interface KlingProblem {
  code: 1200 | 1201;
  message: string;
}
const bad = (message: string): KlingProblem => ({ code: 1201, message });

function checkImages(list: unknown, hasVideo: boolean, base: boolean): KlingProblem | undefined {
  if (list === undefined) return undefined;
  if (!Array.isArray(list)) return bad('image_list must be an array');
  if (list.length > (hasVideo ? 4 : 7)) return bad(`image_list holds at most ${hasVideo ? 4 : 7} images`);
  const types: unknown[] = [];
  for (const [i, img] of list.entries()) {
    if (!isObj(img) || typeof img.image_url !== 'string' || !URL_OR_B64.test(img.image_url)) return bad(`image_list[${i}].image_url must be a URL or Base64`);
    if (Object.keys(img).some((k) => k !== 'image_url' && k !== 'type')) return bad(`image_list[${i}] takes image_url and type only`);
    if (img.type !== undefined && !oneOf(img.type, ['first_frame', 'end_frame'])) return bad(`image_list[${i}].type must be first_frame or end_frame`);
    types.push(img.type);
  }
  if (types.includes('end_frame') && !types.includes('first_frame')) return bad('an end_frame needs a first_frame');
  if (base && types.some((t) => t !== undefined)) return bad('a base video takes no first_frame / end_frame');
  return undefined;
}

function checkVideos(list: unknown): KlingProblem | undefined {
  if (list === undefined) return undefined;
  if (!Array.isArray(list) || list.length > 1) return bad('video_list must be an array of at most 1 video');
  const v: unknown = list[0];
  if (!isObj(v) || typeof v.video_url !== 'string' || !/^https?:\/\/\S+$/.test(v.video_url)) return bad('video_list[0].video_url must be a URL');
  if (Object.keys(v).some((k) => !['video_url', 'refer_type', 'keep_original_sound'].includes(k)))
    return bad('video_list[0] takes video_url, refer_type, keep_original_sound');
  if (v.refer_type !== undefined && !oneOf(v.refer_type, ['base', 'feature'])) return bad('video_list[0].refer_type must be base or feature');
  if (v.keep_original_sound !== undefined && !oneOf(v.keep_original_sound, ['yes', 'no'])) return bad('video_list[0].keep_original_sound must be yes or no');
  return undefined;
}

/** The first problem of an Omni-Video body, or undefined. */
export function validateOmniBody(body: unknown): KlingProblem | undefined {
  if (!isObj(body)) return { code: 1200, message: 'request body must be a JSON object' };
  const extra = Object.keys(body).find((k) => !FIELDS.includes(k));
  if (extra) return bad(`unknown field ${extra}`);
  if (body.model_name !== undefined && !oneOf(body.model_name, KLING_SIM_MODELS)) return bad(`model_name must be one of ${KLING_SIM_MODELS.join(', ')}`);
  if (typeof body.prompt !== 'string' || body.prompt.length < 1 || body.prompt.length > 2500) return bad('prompt is required, 1-2500 characters');
  if (body.mode !== undefined && !oneOf(body.mode, ['std', 'pro'])) return bad('mode must be std or pro');
  if (body.callback_url !== undefined && !isCallbackUrl(body.callback_url)) return bad('callback_url must be an http(s) URL');
  const video = Array.isArray(body.video_list) && isObj(body.video_list[0]) ? body.video_list[0] : undefined;
  const base = video !== undefined && (video.refer_type ?? 'base') === 'base';
  const videoProblem = checkVideos(body.video_list);
  if (videoProblem) return videoProblem;
  const imageProblem = checkImages(body.image_list, video !== undefined, base);
  if (imageProblem) return imageProblem;
  const firstFrame = Array.isArray(body.image_list) && body.image_list.some((i) => isObj(i) && i.type === 'first_frame');
  if (body.aspect_ratio !== undefined && !oneOf(body.aspect_ratio, RATIOS)) return bad(`aspect_ratio must be one of ${RATIOS.join(', ')}`);
  if (body.aspect_ratio === undefined && !firstFrame && !base) return bad('aspect_ratio is required without a first frame or a base video');
  if (body.duration !== undefined) {
    if (base) return bad('duration cannot be set when a base video is edited');
    if (typeof body.duration !== 'string') return bad('duration must be a string');
    const allowed = video ? ['3', '4', '5', '6', '7', '8', '9', '10'] : ['5', '10'];
    if (!allowed.includes(body.duration)) return bad(`duration must be one of ${allowed.join(', ')}`);
  }
  return undefined;
}
