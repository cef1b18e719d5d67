import { isObject, type Json } from '../chat-completions/chat-messages';

/**
 * The request half of a `/v1/messages` call served by an `openai` channel (docs/upstreams/openai.md, "Chat"): a
 * messages body → a chat-completions body that OpenAI's documented rules accept
 * (https://platform.openai.com/docs/api-reference/chat/create): the system prompt first as a `system` message;
 * a user turn's `tool_result` blocks as `tool` messages right after the assistant turn that called them (before the
 * turn's other content, in the order given); no empty text parts; images as `image_url` parts (data URLs for base64);
 * an assistant turn's tool_use blocks as `tool_calls` (its text as `content`, or null with only calls);
 * `max_tokens` as `max_completion_tokens`; a stream asks for its usage (`stream_options.include_usage`). One text
 * keeps the plain string form; several parts stay parts (an assistant's texts are one string, as chat answers them).
 * What chat cannot carry is a problem naming the field (the channel is then not used for this call):
 * documents, server tools, and a tool result's image.
 */
export type Translated = { body: Json } | { problem: { field: string; message: string } };

const TOOL_CHOICES: Readonly<Record<string, string>> = { auto: 'auto', any: 'required', none: 'none' };

class Untranslatable extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

const blocksOf = (content: unknown): Json[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content.filter(isObject) : [];

/** The text of a tool result's content (a string, or its text blocks joined). */
function resultText(content: unknown, at: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  return blocksOf(content)
    .map((b, j) => {
      if (b.type !== 'text')
        throw new Untranslatable(`${at}.content[${j}].type`, `an \`openai\` channel takes only text in a tool result, not '${String(b.type)}'`);
      return typeof b.text === 'string' ? b.text : '';
    })
    .join('\n');
}

function imagePart(b: Json, at: string): Json {
  const src = isObject(b.source) ? b.source : {};
  if (src.type === 'base64') return { type: 'image_url', image_url: { url: `data:${String(src.media_type)};base64,${String(src.data)}` } };
  if (src.type === 'url') return { type: 'image_url', image_url: { url: String(src.url) } };
  throw new Untranslatable(`${at}.source.type`, `an \`openai\` channel takes images as base64 or url, not '${String(src.type)}'`);
}

function userTurn(m: Json, i: number, out: Json[]): void {
  const parts: Json[] = [];
  for (const [j, b] of blocksOf(m.content).entries()) {
    const at = `messages[${i}].content[${j}]`;
    if (b.type === 'tool_result') {
      const text = resultText(b.content, at);
      // the tool messages come first: they must follow the assistant turn that made the calls
      out.push({ role: 'tool', tool_call_id: String(b.tool_use_id), content: b.is_error === true && text === '' ? 'error' : text });
    } else if (b.type === 'text') {
      if (typeof b.text === 'string' && b.text !== '') parts.push({ type: 'text', text: b.text });
    } else if (b.type === 'image') parts.push(imagePart(b, at));
    else throw new Untranslatable(`${at}.type`, `an \`openai\` channel does not take '${String(b.type)}' blocks`);
  }
  if (parts.length === 0) return;
  // one text keeps the plain string form (what every OpenAI-compatible server takes); several parts stay parts
  out.push({ role: 'user', content: parts.length === 1 && parts[0].type === 'text' ? parts[0].text : parts });
}

function assistantTurn(m: Json, i: number, out: Json[]): void {
  const text: string[] = [];
  const calls: Json[] = [];
  for (const [j, b] of blocksOf(m.content).entries()) {
    if (b.type === 'text') {
      if (typeof b.text === 'string' && b.text !== '') text.push(b.text);
    } else if (b.type === 'tool_use') {
      calls.push({ id: String(b.id), type: 'function', function: { name: String(b.name), arguments: JSON.stringify(b.input ?? {}) } });
    } else if (b.type !== 'thinking' && b.type !== 'redacted_thinking') {
      // thinking is the vendor's own reasoning record: chat has no place for it, and it changes no answer
      throw new Untranslatable(`messages[${i}].content[${j}].type`, `an \`openai\` channel does not take '${String(b.type)}' blocks`);
    }
  }
  if (text.length === 0 && calls.length === 0) return;
  out.push({ role: 'assistant', content: text.length > 0 ? text.join('') : null, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
}

function toolsOf(tools: unknown): Json[] | undefined {
  if (!Array.isArray(tools)) return undefined;
  return tools.filter(isObject).map((t, i) => {
    if (t.type !== undefined && t.type !== 'custom')
      throw new Untranslatable(`tools[${i}].type`, `an \`openai\` channel does not run server tools (${JSON.stringify(t.type)})`);
    const fn: Json = { name: t.name, parameters: t.input_schema ?? { type: 'object', properties: {} } };
    if (typeof t.description === 'string') fn.description = t.description;
    return { type: 'function', function: fn };
  });
}

/** `model`: the vendor's name for the model (the channel's `model_map`). */
export function chatBodyOfMessages(b: Json, model: string): Translated {
  try {
    const messages: Json[] = [];
    const system = blocksOf(b.system).filter((x) => typeof x.text === 'string' && x.text !== '');
    if (system.length > 0)
      messages.push({ role: 'system', content: system.length === 1 ? system[0].text : system.map((x) => ({ type: 'text', text: x.text })) });
    for (const [i, m] of (b.messages as Json[]).entries()) (m.role === 'assistant' ? assistantTurn : userTurn)(m, i, messages);
    if (!messages.some((m) => m.role !== 'system')) throw new Untranslatable('messages', 'every message is empty: there is nothing to send');
    const out: Json = { model, messages, max_completion_tokens: b.max_tokens };
    if (typeof b.temperature === 'number') out.temperature = b.temperature;
    if (typeof b.top_p === 'number') out.top_p = b.top_p;
    if (Array.isArray(b.stop_sequences) && b.stop_sequences.length > 0) out.stop = b.stop_sequences;
    const tools = toolsOf(b.tools);
    if (tools && tools.length > 0) {
      out.tools = tools;
      const c = isObject(b.tool_choice) ? b.tool_choice : undefined;
      if (c?.type === 'tool') out.tool_choice = { type: 'function', function: { name: c.name } };
      else if (typeof c?.type === 'string' && TOOL_CHOICES[c.type]) out.tool_choice = TOOL_CHOICES[c.type];
      if (c?.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
    }
    if (isObject(b.metadata) && typeof b.metadata.user_id === 'string') out.user = b.metadata.user_id;
    if (b.stream === true) {
      out.stream = true;
      out.stream_options = { include_usage: true };
    }
    return { body: out };
  } catch (e) {
    if (e instanceof Untranslatable) return { problem: { field: e.field, message: e.message } };
    throw e;
  }
}
