import { isObject, type Json } from './chat-messages';

/**
 * The answer half of the translation (docs/chat.md): a messages-protocol message → a chat completion, its stop
 * reason → a finish reason, its usage → the chat usage shape, a vendor error → the chat error envelope.
 */

/** What the chat answer says that the upstream message does not: the client's model name and the time. */
export interface ChatAnswerContext {
  model: string;
  /** Unix seconds. */
  created: number;
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

/**
 * Every stop reason of the messages protocol → exactly one chat finish reason (docs/chat.md has the same table).
 * Chat has five finish reasons for seven stop reasons, so some share one; none is left to a default:
 * - end_turn, stop_sequence → stop (a whole answer; chat does not say which stop sequence matched);
 * - max_tokens, model_context_window_exceeded → length (cut short by a token limit);
 * - pause_turn → length: the vendor paused a long turn and the answer is incomplete; chat's way to say "incomplete,
 *   send it back to continue" is `length` (`stop` would tell the client the answer is whole);
 * - tool_use → tool_calls; refusal → content_filter.
 */
const FINISH_REASONS: Readonly<Record<string, string>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  pause_turn: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

/** A messages stop reason → a chat finish reason (a reason newer than this table reads as `stop`; none yet → null). */
export const finishReasonOf = (stop: unknown): string | null => (typeof stop === 'string' ? (FINISH_REASONS[stop] ?? 'stop') : null);

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);

/** Prompt tokens are every input token the upstream counted, cached ones included (they are listed apart too). */
export function usageOf(u: unknown): ChatUsage {
  const x = isObject(u) ? u : {};
  const cached = count(x.cache_read_input_tokens);
  const prompt = count(x.input_tokens) + count(x.cache_creation_input_tokens) + cached;
  const completion = count(x.output_tokens);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_tokens_details: { cached_tokens: cached } };
}

/** The chat id of an upstream message id (the client can quote either in a support request). */
export const chatIdOf = (upstreamId: unknown): string => `chatcmpl-${typeof upstreamId === 'string' && upstreamId !== '' ? upstreamId : 'unknown'}`;

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatAssistantMessage {
  role: 'assistant';
  content: string | null;
  refusal: null;
  tool_calls?: ChatToolCall[];
}

/** Content blocks of an assistant message → its chat form: the text blocks joined, tool_use blocks as tool_calls (thinking is not shown). */
export function assistantMessageOf(blocks: unknown): ChatAssistantMessage {
  const list = typeof blocks === 'string' ? [{ type: 'text', text: blocks }] : Array.isArray(blocks) ? blocks.filter(isObject) : [];
  const texts: string[] = [];
  const calls: ChatToolCall[] = [];
  for (const b of list) {
    if (b.type === 'text' && typeof b.text === 'string') texts.push(b.text);
    else if (b.type === 'tool_use')
      calls.push({ id: String(b.id), type: 'function', function: { name: String(b.name), arguments: JSON.stringify(b.input ?? {}) } });
  }
  const message: ChatAssistantMessage = { role: 'assistant', content: texts.length > 0 ? texts.join('') : null, refusal: null };
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

/** A whole (non-streamed) messages answer → a chat completion. */
export function chatCompletionOf(msg: Json, ctx: ChatAnswerContext): Json {
  return {
    id: chatIdOf(msg.id),
    object: 'chat.completion',
    created: ctx.created,
    model: ctx.model,
    choices: [{ index: 0, message: assistantMessageOf(msg.content), logprobs: null, finish_reason: finishReasonOf(msg.stop_reason) ?? 'stop' }],
    usage: usageOf(msg.usage),
  };
}

export interface ChatErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export const chatError = (type: string, message: string, param: string | null = null, code: string | null = null): ChatErrorBody => ({
  error: { message, type, param, code },
});

/** A vendor error body (`{type: "error", error: {type, message}}`) → the chat envelope, its type and message kept. */
export function chatErrorOfUpstream(status: number, body: Buffer): ChatErrorBody {
  try {
    const e = (JSON.parse(body.toString('utf8')) as Json).error;
    if (isObject(e) && typeof e.message === 'string') return chatError(typeof e.type === 'string' ? e.type : 'upstream_error', e.message);
  } catch {
    // not JSON: described below
  }
  return chatError('upstream_error', `The upstream answered ${status}`);
}
