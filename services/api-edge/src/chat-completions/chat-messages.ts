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

/** String content stays a string; parts become blocks. */
function contentOf(content: unknown, at: string, allow: readonly string[]): string | Json[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw bad(`${at}.content`, 'type', `\`${at}.content\` must be a string or an array of content parts`);
  return content.map((p, j) => partOf(p, `${at}.content[${j}]`, allow));
}

const textBlocks = (c: string | Json[]): Json[] => (typeof c === 'string' ? [{ type: 'text', text: c }] : c);

function assistantOf(m: Json, at: string): Json {
  const blocks: Json[] = m.content === undefined || m.content === null ? [] : textBlocks(contentOf(m.content, at, ['text', 'refusal']));
  const calls = m.tool_calls;
  if (calls !== undefined && calls !== null && !Array.isArray(calls)) throw bad(`${at}.tool_calls`, 'type', `\`${at}.tool_calls\` must be an array`);
  for (const [j, c] of (calls ?? []).entries()) {
    const f = isObject(c) ? c.function : undefined;
    const call = `${at}.tool_calls[${j}]`;
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
    blocks.push({ type: 'tool_use', id: c.id, name: f.name, input });
  }
  if (blocks.length === 0) throw bad(`${at}.content`, 'required', `\`${at}.content\`: an assistant message needs content or tool_calls`);
  // a plain text answer keeps the plain string form
  const only = blocks.length === 1 && typeof m.content === 'string' ? m.content : undefined;
  return { role: 'assistant', content: only ?? blocks };
}

function toolResultOf(m: Json, at: string): Json {
  if (typeof m.tool_call_id !== 'string' || m.tool_call_id === '')
    throw bad(`${at}.tool_call_id`, 'required', `\`${at}.tool_call_id\` is required: the id of the tool call answered`);
  return { type: 'tool_result', tool_use_id: m.tool_call_id, content: contentOf(m.content, at, ['text']) };
}

/**
 * The conversation in the messages protocol: system and developer messages become the top-level `system` (in
 * order, wherever they stand); a run of `tool` messages becomes one user message of `tool_result` blocks (the
 * protocol wants every result of a turn in the next user message); user and assistant messages map one to one.
 */
export function messagesOf(list: unknown): { system: Json[]; messages: Json[] } {
  if (!Array.isArray(list) || list.length === 0) throw bad('messages', 'required', '`messages` is required: a non-empty array of {role, content}');
  const system: Json[] = [];
  const messages: Json[] = [];
  let results: Json[] | undefined;
  for (const [i, m] of list.entries()) {
    const at = `messages[${i}]`;
    if (!isObject(m)) throw bad(at, 'type', `\`${at}\` must be an object {role, content}`);
    if (m.role !== 'tool') results = undefined;
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(...textBlocks(contentOf(m.content, at, ['text'])));
        break;
      case 'user':
        messages.push({ role: 'user', content: contentOf(m.content, at, ['text', 'image_url']) });
        break;
      case 'assistant':
        messages.push(assistantOf(m, at));
        break;
      case 'tool':
        if (!results) {
          results = [];
          messages.push({ role: 'user', content: results });
        }
        results.push(toolResultOf(m, at));
        break;
      default:
        throw bad(`${at}.role`, 'enum', `\`${at}.role\` must be 'system', 'developer', 'user', 'assistant' or 'tool'`);
    }
  }
  if (messages.length === 0) throw bad('messages', 'required', '`messages` needs at least one user message besides system messages');
  return { system, messages };
}
