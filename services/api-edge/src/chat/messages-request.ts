import { DomainError } from '@gmg/errors';

/** What the gateway reads of a messages request; the body itself goes upstream byte for byte. */
export interface MessagesRequest {
  model: string;
  maxTokens: number;
  stream: boolean;
  /** An upper bound of the input tokens the upstream can count (see inputUpperBound). */
  inputBound: number;
  images: number;
  /** Document blocks (PDF or text), each bounded by its real size (documentTokenBound). */
  documents: number;
  /** UTF-8 bytes of the body without image and document data (the text an estimate counts). */
  textBytes: number;
}

/** Tokens an image can cost at most (the vendor's ceiling for the largest image it accepts without resizing). */
export const IMAGE_TOKEN_CEILING = 1600;
/** The vendor's PDF limits and per-page cost: at most 100 pages, each an image (≤ IMAGE_TOKEN_CEILING) plus its text (≤ 3,000). */
export const PDF_MAX_PAGES = 100;
export const PAGE_TOKEN_CEILING = IMAGE_TOKEN_CEILING + 3000;
/** The smallest a PDF page can be (bytes): a PDF of n bytes has at most n / this + 1 pages. */
export const MIN_PDF_PAGE_BYTES = 1000;
/** Room for what the upstream adds to the prompt itself (tool-use and thinking system prompts). */
export const PROMPT_OVERHEAD_TOKENS = 1000;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const bad = (field: string, rule: string, message: string) => new DomainError('invalid_request', message, { field, rule });

/**
 * Parses and checks the fields the gateway relies on (model, max_tokens, messages, stream); everything else is
 * the upstream's to judge and passes through untouched.
 */
export function parseMessagesRequest(raw: Buffer, o: { countOnly?: boolean } = {}): MessagesRequest {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new DomainError('invalid_json', 'Request body is not valid JSON');
  }
  if (!isObject(body)) throw bad('', 'type', 'Request body must be a JSON object');
  if (typeof body.model !== 'string' || body.model.trim() === '')
    throw bad('model', 'required', '`model` is required: a chat model from GET /v1/models?expand=category');
  // count_tokens takes the same body without max_tokens (nothing is generated)
  const max = o.countOnly && body.max_tokens === undefined ? 1 : body.max_tokens;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1) throw bad('max_tokens', 'integer', '`max_tokens` is required: an integer ≥ 1');
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw bad('messages', 'required', '`messages` is required: a non-empty array of {role, content}');
  for (const [i, m] of body.messages.entries()) {
    if (!isObject(m) || (m.role !== 'user' && m.role !== 'assistant'))
      throw bad(`messages[${i}].role`, 'enum', `\`messages[${i}].role\` must be 'user' or 'assistant'`);
    if (typeof m.content !== 'string' && !Array.isArray(m.content))
      throw bad(`messages[${i}].content`, 'type', `\`messages[${i}].content\` must be a string or an array of content parts`);
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean') throw bad('stream', 'type', '`stream` must be a boolean');
  const m = measure(body);
  return {
    model: body.model,
    maxTokens: max,
    stream: body.stream === true,
    images: m.images,
    documents: m.documents,
    textBytes: m.bytes,
    inputBound: m.bytes + m.images * IMAGE_TOKEN_CEILING + m.documentTokens + PROMPT_OVERHEAD_TOKENS,
  };
}

/**
 * The most tokens a document block can cost, from its real size: a text document is its text (a token is at least
 * one byte); a PDF at most PAGE_TOKEN_CEILING per page, its pages bounded by its bytes and by the vendor's
 * 100-page limit; a PDF by URL (size unknown here) at that limit.
 */
export function documentTokenBound(block: Record<string, unknown>): number {
  const src = isObject(block.source) ? block.source : {};
  const pdfCap = PDF_MAX_PAGES * PAGE_TOKEN_CEILING;
  if (src.type === 'text' && typeof src.data === 'string') return Buffer.byteLength(src.data, 'utf8');
  if (src.type === 'content' && Array.isArray(src.content)) return Buffer.byteLength(JSON.stringify(src.content), 'utf8');
  if (src.type === 'base64' && typeof src.data === 'string') {
    const bytes = Math.floor((src.data.length * 3) / 4);
    return Math.min(pdfCap, PAGE_TOKEN_CEILING * (1 + Math.ceil(bytes / MIN_PDF_PAGE_BYTES)));
  }
  return pdfCap;
}

/**
 * UTF-8 bytes of the body's JSON without image and document data, the image count, and the documents' bound.
 * A token is at least one byte of text in every tokenizer we know, so the bytes bound the text tokens; images are
 * bounded by IMAGE_TOKEN_CEILING each (their base64 size says little about their token count).
 */
function measure(body: Record<string, unknown>): { bytes: number; images: number; documents: number; documentTokens: number } {
  let images = 0;
  let documents = 0;
  let documentTokens = 0;
  const json = JSON.stringify(body, (_k, v: unknown) => {
    if (isObject(v) && v.type === 'image') {
      images++;
      return null;
    }
    if (isObject(v) && v.type === 'document') {
      documents++;
      documentTokens += documentTokenBound(v);
      return null;
    }
    return v;
  });
  return { bytes: Buffer.byteLength(json, 'utf8'), images, documents, documentTokens };
}
