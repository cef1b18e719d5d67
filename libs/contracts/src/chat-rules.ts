/**
 * The structural rules of OpenAI's chat completions that the vendor enforces with a 400 before any model runs, as
 * one pure check (the sibling of messages-rules.ts): the simulator's chat-completions mode refuses what this finds,
 * and the messages → chat-completions translation of `openai` channels is tested against it.
 *
 * Sources (OpenAI's public documentation; the words of each problem follow OpenAI's 400 answers as they are widely
 * quoted, `param` the JSON path, `code` one of `invalid_value`, `invalid_type`, `missing_required_parameter`,
 * `unknown_parameter`, `empty_array`):
 * - Chat Completions API reference (https://platform.openai.com/docs/api-reference/chat/create): the request
 *   parameters (anything else: "Unrecognized request argument supplied"); `messages` a non-empty array of developer,
 *   system, user, assistant and tool messages; the content parts each role takes (user: text, image_url,
 *   input_audio, file; system/developer/tool: text; assistant: text, refusal), a non-empty array when an array;
 *   an assistant's `content` required unless it has `tool_calls`; `tool_calls[]` of `{id, type: "function",
 *   function: {name, arguments}}` with `arguments` a string of JSON; a tool message's `tool_call_id` required;
 *   `stream_options` "only set this when you set stream: true"; `tools[].function.name` of a-z, A-Z, 0-9,
 *   underscores and dashes, at most 64.
 * - Function calling guide (https://platform.openai.com/docs/guides/function-calling): the tool messages answer the
 *   assistant message's calls right after it, one per `tool_call_id` ("An assistant message with 'tool_calls' must
 *   be followed by tool messages responding to each 'tool_call_id'"; "messages with role 'tool' must be a response
 *   to a preceeding message with 'tool_calls'", OpenAI's own spelling).
 */

type Json = Record<string, unknown>;
export interface ChatRuleProblem {
  param: string;
  code: string;
  message: string;
}

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The request parameters of the reference (deprecated ones included: OpenAI still takes them). */
const PARAMS = new Set([
  'model',
  'messages',
  'audio',
  'frequency_penalty',
  'function_call',
  'functions',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'metadata',
  'modalities',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'prompt_cache_key',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'verbosity',
  'web_search_options',
]);

/** The content part types each role takes (a string is always allowed; `assistant` also null with tool_calls). */
const PARTS: Record<string, readonly string[]> = {
  developer: ['text'],
  system: ['text'],
  user: ['text', 'image_url', 'input_audio', 'file'],
  assistant: ['text', 'refusal'],
  tool: ['text'],
};

const invalid = (param: string, message: string, code = 'invalid_value'): ChatRuleProblem => ({ param, code, message });

function contentProblem(m: Json, at: string): ChatRuleProblem | undefined {
  const c = m.content;
  const role = m.role as string;
  if (typeof c === 'string') return undefined;
  if (c === null || c === undefined) {
    if (role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) return undefined;
    return invalid(`${at}.content`, `Missing required parameter: '${at}.content'.`, 'missing_required_parameter');
  }
  if (!Array.isArray(c))
    return invalid(
      `${at}.content`,
      `Invalid type for '${at}.content': expected one of a string or array of objects, but got an object instead.`,
      'invalid_type',
    );
  if (c.length === 0)
    return invalid(
      `${at}.content`,
      `Invalid '${at}.content': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
      'empty_array',
    );
  for (const [j, p] of c.entries()) {
    const pat = `${at}.content[${j}]`;
    if (!isObj(p) || typeof p.type !== 'string') return invalid(`${pat}.type`, `Missing required parameter: '${pat}.type'.`, 'missing_required_parameter');
    if (!PARTS[role].includes(p.type)) {
      return invalid(`${pat}.type`, `Invalid value: '${p.type}'. Supported values are: ${PARTS[role].map((t) => `'${t}'`).join(' and ')}.`);
    }
    if (p.type === 'text' && typeof p.text !== 'string')
      return invalid(`${pat}.text`, `Missing required parameter: '${pat}.text'.`, 'missing_required_parameter');
    if (p.type === 'image_url' && !(isObj(p.image_url) && typeof p.image_url.url === 'string')) {
      return invalid(`${pat}.image_url.url`, `Missing required parameter: '${pat}.image_url.url'.`, 'missing_required_parameter');
    }
  }
  return undefined;
}

function toolCallsProblem(m: Json, at: string): ChatRuleProblem | undefined {
  if (m.tool_calls === undefined) return undefined;
  if (m.role !== 'assistant') return invalid(`${at}.tool_calls`, `Unrecognized request argument supplied: ${at}.tool_calls`, 'unknown_parameter');
  if (!Array.isArray(m.tool_calls)) return invalid(`${at}.tool_calls`, `Invalid type for '${at}.tool_calls': expected an array.`, 'invalid_type');
  if (m.tool_calls.length === 0)
    return invalid(
      `${at}.tool_calls`,
      `Invalid '${at}.tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
      'empty_array',
    );
  for (const [j, t] of m.tool_calls.entries()) {
    const tat = `${at}.tool_calls[${j}]`;
    if (!isObj(t) || typeof t.id !== 'string') return invalid(`${tat}.id`, `Missing required parameter: '${tat}.id'.`, 'missing_required_parameter');
    if (t.type !== 'function') return invalid(`${tat}.type`, `Invalid value: '${String(t.type)}'. Supported values are: 'function'.`);
    if (!isObj(t.function) || typeof t.function.name !== 'string' || typeof t.function.arguments !== 'string') {
      return invalid(`${tat}.function`, `Invalid '${tat}.function': 'name' and 'arguments' (a string of JSON) are required.`, 'missing_required_parameter');
    }
  }
  return undefined;
}

/** Tool results answer the tool calls of the assistant message right before them, every call answered, ids matching. */
function toolOrderProblem(messages: Json[]): ChatRuleProblem | undefined {
  let open: Set<string> | undefined;
  let openAt = -1;
  for (const [i, m] of messages.entries()) {
    if (m.role === 'tool') {
      if (typeof m.tool_call_id !== 'string')
        return invalid(`messages[${i}].tool_call_id`, `Missing required parameter: 'messages[${i}].tool_call_id'.`, 'missing_required_parameter');
      if (!open || !open.delete(m.tool_call_id)) {
        return invalid(`messages.[${i}].role`, `Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.`);
      }
      continue;
    }
    if (open && open.size > 0) {
      return invalid(
        `messages.[${openAt}].role`,
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`,
      );
    }
    open = m.role === 'assistant' && Array.isArray(m.tool_calls) ? new Set((m.tool_calls as Json[]).map((t) => t.id as string)) : undefined;
    openAt = i;
  }
  if (open && open.size > 0) {
    return invalid(
      `messages.[${openAt}].role`,
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`,
    );
  }
  return undefined;
}

function toolsProblem(body: Json): ChatRuleProblem | undefined {
  if (body.tools === undefined) return undefined;
  if (!Array.isArray(body.tools)) return invalid('tools', "Invalid type for 'tools': expected an array.", 'invalid_type');
  for (const [i, t] of body.tools.entries()) {
    if (!isObj(t) || t.type !== 'function')
      return invalid(`tools[${i}].type`, `Invalid value: '${String(isObj(t) ? t.type : t)}'. Supported values are: 'function' and 'custom'.`);
    if (!isObj(t.function) || typeof t.function.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(t.function.name)) {
      return invalid(
        `tools[${i}].function.name`,
        `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
      );
    }
  }
  return undefined;
}

/** The first problem of a chat-completions body (OpenAI answers one at a time), or undefined. */
export function chatBodyProblem(body: unknown): ChatRuleProblem | undefined {
  if (!isObj(body)) return invalid('', 'We could not parse the JSON body of your request.', 'invalid_type');
  for (const k of Object.keys(body)) if (!PARAMS.has(k)) return invalid(k, `Unrecognized request argument supplied: ${k}`, 'unknown_parameter');
  if (typeof body.model !== 'string') return invalid('model', "Missing required parameter: 'model'.", 'missing_required_parameter');
  if (!Array.isArray(body.messages)) return invalid('messages', "Missing required parameter: 'messages'.", 'missing_required_parameter');
  if (body.messages.length === 0)
    return invalid('messages', "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", 'empty_array');
  for (const [i, m] of body.messages.entries()) {
    const at = `messages[${i}]`;
    if (!isObj(m) || typeof m.role !== 'string') return invalid(`${at}.role`, `Missing required parameter: '${at}.role'.`, 'missing_required_parameter');
    if (!(m.role in PARTS)) {
      return invalid(`${at}.role`, `Invalid value: '${m.role}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`);
    }
    const p = contentProblem(m, at) ?? toolCallsProblem(m, at);
    if (p) return p;
  }
  const order = toolOrderProblem(body.messages as Json[]);
  if (order) return order;
  if (body.stream_options !== undefined && body.stream !== true) {
    return invalid('stream_options', "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
  }
  return toolsProblem(body);
}
