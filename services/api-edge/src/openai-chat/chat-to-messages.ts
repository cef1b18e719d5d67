import { isObject, type Json } from '../chat-completions/chat-messages';

/**
 * The answer half of a `/v1/messages` call served by an `openai` channel: a chat completion → a messages message,
 * a finish reason → a stop reason, the chat usage → the messages usage, an OpenAI error → the vendor's error envelope.
 */

/**
 * Every finish reason → exactly one stop reason: stop → end_turn, length → max_tokens, tool_calls (and the legacy
 * function_call) → tool_use, content_filter → refusal. A reason newer than this table reads as end_turn.
 */
const STOP_REASONS: Readonly<Record<string, string>> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

export const stopReasonOf = (finish: unknown): string | null => (typeof finish === 'string' ? (STOP_REASONS[finish] ?? 'end_turn') : null);

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);

export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** Chat's prompt tokens include the cached ones; the messages protocol counts them apart. */
export function messagesUsageOf(u: unknown): MessagesUsage {
  const x = isObject(u) ? u : {};
  const cached = count(isObject(x.prompt_tokens_details) ? x.prompt_tokens_details.cached_tokens : 0);
  return {
    input_tokens: Math.max(0, count(x.prompt_tokens) - cached),
    output_tokens: count(x.completion_tokens),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
  };
}

/** The messages id of an upstream chat id (the client can quote either). */
export const messageIdOf = (chatId: unknown): string => `msg_${typeof chatId === 'string' && chatId !== '' ? chatId : 'unknown'}`;

/** Tool arguments (a string of JSON) → the tool_use input (an object; unparsable arguments are kept under `_raw`). */
export function toolInputOf(args: unknown): Json {
  if (typeof args !== 'string' || args === '') return {};
  try {
    const v: unknown = JSON.parse(args);
    return isObject(v) ? v : { _raw: args };
  } catch {
    return { _raw: args };
  }
}

/** `model`: the name the client asked for (the answer echoes it, as on a `messages` channel's translation the other way). */
export function messageOfCompletion(c: Json, model: string): Json {
  const choice = Array.isArray(c.choices) && isObject(c.choices[0]) ? c.choices[0] : {};
  const m = isObject(choice.message) ? choice.message : {};
  const content: Json[] = [];
  if (typeof m.content === 'string' && m.content !== '') content.push({ type: 'text', text: m.content });
  if (typeof m.refusal === 'string' && m.refusal !== '') content.push({ type: 'text', text: m.refusal });
  for (const t of Array.isArray(m.tool_calls) ? m.tool_calls.filter(isObject) : []) {
    const fn = isObject(t.function) ? t.function : {};
    content.push({ type: 'tool_use', id: String(t.id), name: String(fn.name), input: toolInputOf(fn.arguments) });
  }
  return {
    id: messageIdOf(c.id),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReasonOf(choice.finish_reason) ?? 'end_turn',
    stop_sequence: null,
    usage: messagesUsageOf(c.usage),
  };
}

/** The vendor's error type for an HTTP status (its clients pick the exception class by status, and show the type). */
function errorTypeOf(status: number): string {
  if (status === 400) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 529 || status === 503) return 'overloaded_error';
  return 'api_error';
}

/** An OpenAI error body (`{error: {message, type, param, code}}`) → the messages envelope, its message kept. */
export function messagesErrorOf(status: number, body: Buffer): Json {
  let message = `The upstream answered ${status}`;
  try {
    const e = (JSON.parse(body.toString('utf8')) as Json).error;
    if (isObject(e) && typeof e.message === 'string') message = e.message;
  } catch {
    // not JSON: the status says it
  }
  return { type: 'error', error: { type: errorTypeOf(status), message } };
}
