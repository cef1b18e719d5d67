import { badField, isObject, messagesOf, type Json } from './chat-messages';

/**
 * A chat-completions request (the protocol most chat clients speak), checked and translated to the messages
 * protocol the channels speak. docs/chat.md has the field-by-field table; this file is its request half.
 */
export interface ChatRequest {
  /** The model name as the client sent it (the answer echoes it). */
  model: string;
  stream: boolean;
  /** `stream_options.include_usage`: a last chunk with `usage` and no choices before `[DONE]`. */
  includeUsage: boolean;
  /** The messages-protocol body sent upstream. */
  body: Json;
}

/** `max_tokens` when the client sets neither `max_tokens` nor `max_completion_tokens` (the messages protocol requires one). */
export const DEFAULT_MAX_TOKENS = 4096;

const unsupported = (field: string, message: string) => badField(field, 'unsupported_parameter', `\`${field}\` is not supported: ${message}`);

/**
 * Parameters the messages channels cannot honour: a 400 naming the parameter rather than an answer that silently
 * ignores what was asked. (A parameter at its default value is accepted: clients often send defaults.)
 */
function rejectUnsupported(b: Json): void {
  if (b.n !== undefined && b.n !== null && b.n !== 1) throw unsupported('n', 'one choice per request (n = 1); send several requests for several answers');
  if (b.logprobs !== undefined && b.logprobs !== null && b.logprobs !== false)
    throw unsupported('logprobs', 'the upstream models do not return token log probabilities');
  if (b.top_logprobs !== undefined && b.top_logprobs !== null) throw unsupported('top_logprobs', 'the upstream models do not return token log probabilities');
  if (b.audio !== undefined && b.audio !== null) throw unsupported('audio', 'audio output is not available on this endpoint');
  if (Array.isArray(b.modalities) && b.modalities.some((m) => m !== 'text')) throw unsupported('modalities', "only 'text' output is available");
  if (b.functions !== undefined) throw unsupported('functions', 'use `tools` (the legacy functions form is not translated)');
  if (b.function_call !== undefined) throw unsupported('function_call', 'use `tool_choice` (the legacy functions form is not translated)');
  if (b.prediction !== undefined && b.prediction !== null) throw unsupported('prediction', 'predicted outputs are not available');
  if (isObject(b.response_format) && b.response_format.type !== 'text') {
    throw unsupported('response_format', "only {type: 'text'}; describe the JSON you want in the prompt, or use a tool with a schema");
  }
}

function numberIn(b: Json, field: string, min: number, max: number): number | undefined {
  const v = b[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw badField(field, 'range', `\`${field}\` must be a number from ${min} to ${max} (the messages protocol's range)`);
  }
  return v;
}

function maxTokensOf(b: Json): number {
  for (const field of ['max_completion_tokens', 'max_tokens']) {
    const v = b[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw badField(field, 'integer', `\`${field}\` must be an integer ≥ 1`);
    return v;
  }
  return DEFAULT_MAX_TOKENS;
}

function stopOf(stop: unknown): string[] | undefined {
  if (stop === undefined || stop === null) return undefined;
  const list = typeof stop === 'string' ? [stop] : stop;
  if (!Array.isArray(list) || list.length > 4 || !list.every((s) => typeof s === 'string' && s !== '')) {
    throw badField('stop', 'type', '`stop` must be a non-empty string or an array of at most 4 non-empty strings');
  }
  return list as string[];
}

function toolsOf(tools: unknown): Json[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw badField('tools', 'type', '`tools` must be an array of {type: "function", function: {name, description, parameters}}');
  return tools.map((t, i) => {
    const f = isObject(t) ? t.function : undefined;
    if (!isObject(t) || t.type !== 'function' || !isObject(f) || typeof f.name !== 'string' || f.name === '') {
      throw badField(`tools[${i}]`, 'type', `\`tools[${i}]\` must be {type: "function", function: {name, ...}} (only function tools are translated)`);
    }
    const out: Json = { name: f.name, input_schema: isObject(f.parameters) ? f.parameters : { type: 'object', properties: {} } };
    if (typeof f.description === 'string') out.description = f.description;
    return out;
  });
}

function toolChoiceOf(choice: unknown, parallel: unknown): Json | undefined {
  let out: Json | undefined;
  if (choice === 'auto') out = { type: 'auto' };
  else if (choice === 'none') out = { type: 'none' };
  else if (choice === 'required') out = { type: 'any' };
  else if (isObject(choice) && choice.type === 'function' && isObject(choice.function) && typeof choice.function.name === 'string') {
    out = { type: 'tool', name: choice.function.name };
  } else if (choice !== undefined && choice !== null) {
    throw badField('tool_choice', 'enum', "`tool_choice` must be 'auto', 'none', 'required' or {type: 'function', function: {name}}");
  }
  if (parallel === false && out?.type !== 'none') out = { ...(out ?? { type: 'auto' }), disable_parallel_tool_use: true };
  return out;
}

/** Checks a parsed chat-completions body and translates it; a 400 naming the field for anything it cannot translate. */
export function parseChatRequest(b: unknown): ChatRequest {
  if (!isObject(b)) throw badField('', 'type', 'Request body must be a JSON object');
  if (typeof b.model !== 'string' || b.model.trim() === '')
    throw badField('model', 'required', '`model` is required: a chat model from GET /v1/models?expand=category&category=chat');
  rejectUnsupported(b);
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== 'boolean') throw badField('stream', 'type', '`stream` must be a boolean');
  const stream = b.stream === true;
  const opts = b.stream_options;
  if (opts !== undefined && opts !== null && !isObject(opts)) throw badField('stream_options', 'type', '`stream_options` must be an object');
  const { system, messages } = messagesOf(b.messages);

  const body: Json = { model: b.model, max_tokens: maxTokensOf(b), messages };
  if (system.length > 0) body.system = system;
  const temperature = numberIn(b, 'temperature', 0, 1);
  if (temperature !== undefined) body.temperature = temperature;
  const topP = numberIn(b, 'top_p', 0, 1);
  if (topP !== undefined) body.top_p = topP;
  const stop = stopOf(b.stop);
  if (stop) body.stop_sequences = stop;
  const tools = toolsOf(b.tools);
  if (tools && tools.length > 0) body.tools = tools;
  // the vendors refuse a tool choice with nothing to choose from; a parallel_tool_calls default alone is harmless
  if (b.tool_choice !== undefined && b.tool_choice !== null && !body.tools)
    throw badField('tool_choice', 'requires_tools', '`tool_choice` is only allowed when `tools` are given');
  const toolChoice = toolChoiceOf(b.tool_choice, b.parallel_tool_calls);
  if (toolChoice && body.tools) body.tool_choice = toolChoice;
  if (typeof b.user === 'string' && b.user !== '') body.metadata = { user_id: b.user };
  if (stream) body.stream = true;
  return { model: b.model, stream, includeUsage: stream && isObject(opts) && opts.include_usage === true, body };
}
