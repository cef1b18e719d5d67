import { DomainError } from '@gmg/errors';

export type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
/** A 400 naming the field and the rule (the chat envelope shows them as `param` and `code`). */
export const badField = (field: string, rule: string, message: string) => new DomainError('invalid_request', message, { field, rule });
const bad = badField;

/** Image types the messages protocol takes inline (a data URL of another type is refused by name). */
const DATA_URL = /^data:(image\/(?:png|jpeg|gif|webp));base64,([A-Za-z0-9+/]+=*)$/;

function imageOf(part: Json, at: string): Json {
  const url = isObject(part.image_url) ? part.image_url.url : undefined;
  if (typeof url !== 'string') throw bad(`${at}.image_url.url`, 'required', `\`${at}.image_url.url\` is required: an https URL or a data URL`);
  if (url.startsWith('data:')) {
    const m = DATA_URL.exec(url);
    if (!m) throw bad(`${at}.image_url.url`, 'data_url', `\`${at}.image_url.url\`: a data URL must be data:image/(png|jpeg|gif|webp);base64,<data>`);
    return { type: 'image', source: { type: 'base64', media_type: m[1], data: m[2] } };
  }
  if (!/^https?:\/\//i.test(url)) throw bad(`${at}.image_url.url`, 'url', `\`${at}.image_url.url\` must be an http(s) URL or a data URL`);
  return { type: 'image', source: { type: 'url', url } };
}

/** A content part → a messages content block; `allow` names the part types this role may carry. */
function partOf(p: unknown, at: string, allow: readonly string[]): Json {
  const type = isObject(p) ? p.type : undefined;
  if (!isObject(p) || typeof type !== 'string' || !allow.includes(type)) {
    if (type === 'input_audio') throw bad(`${at}`, 'unsupported_parameter', `\`${at}\`: audio input is not supported`);
    throw bad(at, 'type', `\`${at}\` must be a content part of type ${allow.map((a) => `'${a}'`).join(' or ')}`);
  }
  if (type === 'image_url') return imageOf(p, at);
  const text = type === 'refusal' ? p.refusal : p.text;
  if (typeof text !== 'string') throw bad(`${at}.${type === 'refusal' ? 'refusal' : 'text'}`, 'type', `\`${at}\` needs its text as a string`);
  return { type: 'text', text };
}

/**
 * String content stays a string; parts become blocks. Empty text parts are dropped: the messages protocol refuses
 * an empty text block, and an empty part carries nothing (so '' and [] mean "no content" to the callers).
 */
function contentOf(content: unknown, at: string, allow: readonly string[]): string | Json[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw bad(`${at}.content`, 'type', `\`${at}.content\` must be a string or an array of content parts`);
  return content.map((p, j) => partOf(p, `${at}.content[${j}]`, allow)).filter((b) => !(b.type === 'text' && b.text === ''));
}

const isEmpty = (c: string | Json[]): boolean => c.length === 0;
const textBlocks = (c: string | Json[]): Json[] => (typeof c === 'string' ? (c === '' ? [] : [{ type: 'text', text: c }]) : c);

/** An assistant message → its messages form, or undefined when it carries nothing (no text, no tool calls). */
function assistantOf(m: Json, at: string): Json | undefined {
  const content = m.content === undefined || m.content === null ? '' : contentOf(m.content, at, ['text', 'refusal']);
  // `content: ""` beside tool_calls (what the openai client sends in every tool loop) becomes tool_use blocks only
  const blocks: Json[] = textBlocks(content);
  const calls = m.tool_calls;
  if (calls !== undefined && calls !== null && !Array.isArray(calls)) throw bad(`${at}.tool_calls`, 'type', `\`${at}.tool_calls\` must be an array`);
  for (const [j, c] of (calls ?? []).entries()) blocks.push(toolUseOf(c, `${at}.tool_calls[${j}]`));
  if (blocks.length === 0) return undefined;
  // a plain text answer keeps the plain string form
  return { role: 'assistant', content: blocks.length === 1 && typeof content === 'string' && content !== '' ? content : blocks };
}

function toolUseOf(c: unknown, call: string): Json {
  const f = isObject(c) ? c.function : undefined;
  if (!isObject(c) || typeof c.id !== 'string' || c.id === '' || !isObject(f) || typeof f.name !== 'string') {
    throw bad(call, 'type', `\`${call}\` must be {id, type: 'function', function: {name, arguments}}`);
  }
  let input: unknown = {};
  if (typeof f.arguments === 'string' && f.arguments.trim() !== '') {
    try {
      input = JSON.parse(f.arguments);
    } catch {
      throw bad(`${call}.function.arguments`, 'json', `\`${call}.function.arguments\` must be a JSON object (as a string)`);
    }
  }
  if (!isObject(input)) throw bad(`${call}.function.arguments`, 'json', `\`${call}.function.arguments\` must be a JSON object (as a string)`);
  return { type: 'tool_use', id: c.id, name: f.name, input };
}

/** A tool message → a tool_result block; empty content is left out (the block's `content` is optional). */
function toolResultOf(m: Json, at: string): Json {
  if (typeof m.tool_call_id !== 'string' || m.tool_call_id === '')
    throw bad(`${at}.tool_call_id`, 'required', `\`${at}.tool_call_id\` is required: the id of the tool call answered`);
  const content = contentOf(m.content, at, ['text']);
  return isEmpty(content) ? { type: 'tool_result', tool_use_id: m.tool_call_id } : { type: 'tool_result', tool_use_id: m.tool_call_id, content };
}

/** The tool calls of the last assistant turn still waiting for their tool messages (chat index of that turn, ids). */
interface Pending {
  at: string;
  ids: Set<string>;
}

function unanswered(p: Pending | undefined): void {
  if (p && p.ids.size > 0) {
    const ids = [...p.ids].join(', ');
    throw bad(
      `${p.at}.tool_calls`,
      'tool_results',
      `\`${p.at}.tool_calls\`: every tool call must be answered by a tool message right after it (unanswered: ${ids})`,
    );
  }
}

/**
 * The conversation in the messages protocol, following its vendor's structural rules (libs/contracts
 * messages-rules.ts): system and developer messages become the top-level `system` (in order, wherever they
 * stand); a run of `tool` messages becomes one user message of `tool_result` blocks right after the assistant
 * turn that called them (each call answered, no other id); messages that carry nothing (empty text) are left out;
 * the first message must then be the user's. Consecutive same-role turns stay apart: the vendor merges them.
 */
export function messagesOf(list: unknown): { system: Json[]; messages: Json[] } {
  if (!Array.isArray(list) || list.length === 0) throw bad('messages', 'required', '`messages` is required: a non-empty array of {role, content}');
  const system: Json[] = [];
  const messages: Json[] = [];
  let first: string | undefined;
  let pending: Pending | undefined;
  let results: Json[] | undefined;
  const add = (m: Json, at: string) => {
    first ??= at;
    messages.push(m);
  };
  for (const [i, m] of list.entries()) {
    const at = `messages[${i}]`;
    if (!isObject(m)) throw bad(at, 'type', `\`${at}\` must be an object {role, content}`);
    if (m.role === 'system' || m.role === 'developer') {
      system.push(...textBlocks(contentOf(m.content, at, ['text'])));
      continue;
    }
    if (m.role !== 'tool') {
      unanswered(pending);
      pending = undefined;
      results = undefined;
    }
    switch (m.role) {
      case 'user': {
        const content = contentOf(m.content, at, ['text', 'image_url']);
        if (!isEmpty(content)) add({ role: 'user', content }, at);
        break;
      }
      case 'assistant': {
        const turn = assistantOf(m, at);
        if (turn) add(turn, at);
        if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) pending = { at, ids: new Set((m.tool_calls as Json[]).map((c) => c.id as string)) };
        break;
      }
      case 'tool': {
        const result = toolResultOf(m, at);
        if (!pending?.ids.delete(result.tool_use_id as string)) {
          throw bad(`${at}.tool_call_id`, 'tool_results', `\`${at}.tool_call_id\` must answer a tool call of the assistant message right before it, once`);
        }
        if (!results) {
          results = [];
          add({ role: 'user', content: results }, at);
        }
        results.push(result);
        break;
      }
      default:
        throw bad(`${at}.role`, 'enum', `\`${at}.role\` must be 'system', 'developer', 'user', 'assistant' or 'tool'`);
    }
  }
  unanswered(pending);
  if (messages.length === 0) throw bad('messages', 'required', '`messages` needs at least one user message with content besides system messages');
  if (messages[0].role !== 'user')
    throw bad(
      `${first}.role`,
      'first_message',
      `\`${first}.role\`: the first message after system messages must be the user's (the upstream protocol requires it)`,
    );
  return { system, messages };
}
