import { DomainError } from '@gmg/errors';

/** What the gateway reads of a messages request; the body itself goes upstream byte for byte. */
export interface MessagesRequest {
  model: string;
  maxTokens: number;
  stream: boolean;
  /** An upper bound of the input tokens the upstream can count (see inputUpperBound). */
  inputBound: number;
  images: number;
}

/** Tokens an image can cost at most (the vendor's ceiling for the largest image it accepts without resizing). */
export const IMAGE_TOKEN_CEILING = 1600;
/** Room for what the upstream adds to the prompt itself (tool-use and thinking system prompts). */
export const PROMPT_OVERHEAD_TOKENS = 1000;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const bad = (field: string, rule: string, message: string) => new DomainError('invalid_request', message, { field, rule });

/**
 * Parses and checks the fields the gateway relies on (model, max_tokens, messages, stream); everything else is
 * the upstream's to judge and passes through untouched.
 */
export function parseMessagesRequest(raw: Buffer): MessagesRequest {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new DomainError('invalid_json', 'Request body is not valid JSON');
  }
  if (!isObject(body)) throw bad('', 'type', 'Request body must be a JSON object');
  if (typeof body.model !== 'string' || body.model.trim() === '') throw bad('model', 'required', '`model` is required: a chat model from GET /v1/models?expand=category');
  const max = body.max_tokens;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1) throw bad('max_tokens', 'integer', '`max_tokens` is required: an integer ≥ 1');
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw bad('messages', 'required', '`messages` is required: a non-empty array of {role, content}');
  for (const [i, m] of body.messages.entries()) {
    if (!isObject(m) || (m.role !== 'user' && m.role !== 'assistant')) throw bad(`messages[${i}].role`, 'enum', `\`messages[${i}].role\` must be 'user' or 'assistant'`);
    if (typeof m.content !== 'string' && !Array.isArray(m.content)) throw bad(`messages[${i}].content`, 'type', `\`messages[${i}].content\` must be a string or an array of content parts`);
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean') throw bad('stream', 'type', '`stream` must be a boolean');
  const { bytes, images } = measure(body);
  return { model: body.model, maxTokens: max, stream: body.stream === true, inputBound: bytes + images * IMAGE_TOKEN_CEILING + PROMPT_OVERHEAD_TOKENS, images };
}

/**
 * UTF-8 bytes of the body's JSON without image data, and the image count. A token is at least one byte of text
 * in every tokenizer we know, so the bytes bound the text tokens; images are bounded by IMAGE_TOKEN_CEILING each
 * (their base64 size says little about their token count).
 */
function measure(body: Record<string, unknown>): { bytes: number; images: number } {
  let images = 0;
  const json = JSON.stringify(body, (_k, v: unknown) => {
    if (isObject(v) && (v.type === 'image' || v.type === 'document')) {
      images++;
      return null;
    }
    return v;
  });
  return { bytes: Buffer.byteLength(json, 'utf8'), images };
}
