import type { Request, Response } from 'express';

/**
 * OpenAI's error object: `{error: {message, type, param, code}}` (https://platform.openai.com/docs/guides/error-codes;
 * the shape new-api's docs print for `/v1/videos` too). The `code` words below follow OpenAI's answers as widely
 * reported (`invalid_api_key`, `model_not_found`, `invalid_value`, `unknown_parameter`, `missing_required_parameter`,
 * `rate_limit_exceeded`, `moderation_blocked`); `invalid_type` and `integer_*` wording are guesses in OpenAI's style.
 */
export function sendOpenAiError(
  res: Response,
  status: number,
  message: string,
  param: string | null,
  code: string | null,
  type = 'invalid_request_error',
): void {
  res.status(status).json({ error: { message, type, param, code } });
}

/** A request refused the way the vendor refuses it (thrown by validators, answered by the router). */
export class OpenAiRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null,
    readonly code: string | null,
    readonly type = 'invalid_request_error',
  ) {
    super(message);
  }
}

export const refuse = (param: string, code: string, message: string, status = 400): never => {
  throw new OpenAiRefusal(status, message, param, code);
};

/** A multipart file part as the simulator keeps it (the bytes are not needed: a file was sent). */
interface SentFile {
  file: true;
  type: string;
  size: number;
}
export type OpenAiBody = Record<string, unknown>;

/**
 * The body as OpenAI reads it: JSON, or multipart/form-data (what openai-node sends for `/v1/videos` and
 * `/v1/images/edits`): text fields as strings, files as SentFile, a repeated name (`image[]`) as a list.
 */
export async function readBody(req: Request): Promise<{ form: boolean; body: OpenAiBody }> {
  const ct = req.headers['content-type'] ?? '';
  if (!ct.startsWith('multipart/form-data')) {
    const body: unknown = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      refuse('', 'invalid_request_body', 'We could not parse the JSON body of your request.');
    return { form: false, body: body as OpenAiBody };
  }
  if (!Buffer.isBuffer(req.body)) refuse('', 'invalid_request_body', 'We could not parse the multipart body of your request.');
  const form = await new Response(req.body as Buffer, { headers: { 'content-type': ct } }).formData().catch(() => undefined);
  if (!form) return refuse('', 'invalid_request_body', 'We could not parse the multipart body of your request.');
  const body: OpenAiBody = {};
  for (const [rawName, v] of form) {
    const name = rawName.replace(/\[\]$/, '');
    const value: unknown = typeof v === 'string' ? v : ({ file: true, type: v.type, size: v.size } satisfies SentFile);
    const prev = body[name];
    body[name] = prev === undefined ? (rawName.endsWith('[]') ? [value] : value) : Array.isArray(prev) ? [...(prev as unknown[]), value] : [prev, value];
  }
  return { form: true, body };
}

/** Refuses a parameter the endpoint does not know (OpenAI: 400 `unknown_parameter`). */
export function onlyKnown(body: OpenAiBody, known: readonly string[]): void {
  const extra = Object.keys(body).find((k) => !known.includes(k));
  if (extra !== undefined) refuse(extra, 'unknown_parameter', `Unknown parameter: '${extra}'.`);
}

export function oneOf(body: OpenAiBody, param: string, allowed: readonly string[]): void {
  const v = body[param];
  if (v === undefined || v === null) return;
  if (typeof v !== 'string') refuse(param, 'invalid_type', `Invalid type for '${param}': expected one of ${list(allowed)}, but got ${typeName(v)} instead.`);
  if (!allowed.includes(v as string)) refuse(param, 'invalid_value', `Invalid value: '${quote(v)}'. Supported values are: ${list(allowed)}.`);
}

/** An integer in [min, max]; multipart sends it as text, JSON as a number. */
export function intIn(body: OpenAiBody, param: string, min: number, max: number, form: boolean): number | undefined {
  const raw = body[param];
  if (raw === undefined || raw === null) return undefined;
  const n = form && typeof raw === 'string' && /^-?\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof n !== 'number' || !Number.isInteger(n))
    refuse(param, 'invalid_type', `Invalid type for '${param}': expected an integer, but got ${typeName(raw)} instead.`);
  const v = n as number;
  if (v < min) refuse(param, 'integer_below_min_value', `Invalid '${param}': integer below minimum value. Expected a value >= ${min}, but got ${v} instead.`);
  if (v > max) refuse(param, 'integer_above_max_value', `Invalid '${param}': integer above maximum value. Expected a value <= ${max}, but got ${v} instead.`);
  return v;
}

export function requiredPrompt(body: OpenAiBody, maxLength: number): string {
  const p = body.prompt;
  if (p === undefined || p === null || p === '') return refuse('prompt', 'missing_required_parameter', "Missing required parameter: 'prompt'.");
  if (typeof p !== 'string') return refuse('prompt', 'invalid_type', `Invalid type for 'prompt': expected a string, but got ${typeName(p)} instead.`);
  if (p.length > maxLength)
    refuse('prompt', 'string_above_max_length', `Invalid 'prompt': string too long. Expected a string with maximum length ${maxLength}.`);
  return p;
}

/** `http(s)://…` or a `data:image/…;base64,` URL (OpenAI's "fully qualified URL or base64-encoded data URL"). */
export const isImageUrl = (v: unknown): boolean => typeof v === 'string' && (/^https?:\/\/\S+$/.test(v) || /^data:image\/[a-z+]+;base64,/.test(v));

/** A value as OpenAI quotes it in a message. */
export const quote = (v: unknown): string => (typeof v === 'string' || typeof v === 'number' ? String(v) : JSON.stringify(v));

const list = (xs: readonly string[]): string => xs.map((x) => `'${x}'`).join(', ');
const typeName = (v: unknown): string =>
  typeof v === 'number' ? (Number.isInteger(v) ? 'an integer' : 'a decimal') : Array.isArray(v) ? 'an array' : v === null ? 'null' : `a ${typeof v}`;
