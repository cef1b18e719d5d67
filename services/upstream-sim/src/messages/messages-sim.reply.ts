import { randomBytes } from 'node:crypto';

/**
 * What the simulated model answers: deterministic content and token counts, derived from the request only, so a
 * test can compute the expected usage (and so the gateway's charge) independently.
 */

export type Json = Record<string, unknown>;

export type SimBlock =
  { type: 'text'; text: string } | { type: 'thinking'; thinking: string; signature: string } | { type: 'tool_use'; id: string; name: string; input: Json };

export interface SimUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export interface SimReply {
  blocks: SimBlock[];
  stopReason: 'end_turn' | 'tool_use' | 'max_tokens';
  usage: SimUsage;
}

/** Tokens of an image part, whatever its size (the vendor's real count depends on the pixels). */
export const IMAGE_TOKENS = 256;
/** Tokens of a text: one per started group of 4 characters. */
export const textTokens = (s: string): number => Math.ceil(s.length / 4);

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Input tokens: the JSON text of system + messages + tools with images taken out, plus IMAGE_TOKENS per image. */
export function countInput(body: Json): { tokens: number; images: number } {
  let images = 0;
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (!isObj(v)) return v;
    if (v.type === 'image') {
      images++;
      return null;
    }
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, strip(x)]));
  };
  const text = JSON.stringify(strip({ system: body.system ?? null, messages: body.messages, tools: body.tools ?? null }));
  return { tokens: textTokens(text) + images * IMAGE_TOKENS, images };
}

/** The text of a message's content (string, or its text and tool_result parts). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p) => {
      if (!isObj(p)) return '';
      if (p.type === 'text' && typeof p.text === 'string') return p.text;
      if (p.type === 'tool_result') return contentText(p.content);
      return '';
    })
    .join(' ');
}

const lastUser = (messages: unknown[]): Json | undefined => [...messages].reverse().find((m): m is Json => isObj(m) && m.role === 'user');

const hasToolResult = (m: Json | undefined): boolean => Array.isArray(m?.content) && (m.content as unknown[]).some((p) => isObj(p) && p.type === 'tool_result');

/** Arguments for a tool from its input_schema: "sim" for strings, 1 for numbers, true for booleans. */
export function toolInput(tool: Json): Json {
  const schema = isObj(tool.input_schema) ? tool.input_schema : {};
  const props = isObj(schema.properties) ? schema.properties : {};
  const out: Json = {};
  for (const [k, p] of Object.entries(props)) {
    const t = isObj(p) ? p.type : undefined;
    out[k] = t === 'number' || t === 'integer' ? 1 : t === 'boolean' ? true : 'sim';
  }
  return out;
}

export const blockTokens = (b: SimBlock): number =>
  b.type === 'text' ? textTokens(b.text) : b.type === 'thinking' ? textTokens(b.thinking) : textTokens(JSON.stringify(b.input));

/** The answer to a validated request body. */
export function replyTo(body: Json, images: number, inputTokens: number): SimReply {
  const messages = body.messages as unknown[];
  const user = lastUser(messages);
  const said = contentText(user?.content).trim();
  const blocks: SimBlock[] = [];
  const thinking = isObj(body.thinking) && body.thinking.type === 'enabled';
  if (thinking) {
    blocks.push({ type: 'thinking', thinking: `The user wrote ${said.length} characters.`, signature: randomBytes(24).toString('base64') });
  }
  const tools = Array.isArray(body.tools) ? (body.tools as unknown[]).filter(isObj) : [];
  const choice = isObj(body.tool_choice) ? body.tool_choice.type : undefined;
  let stopReason: SimReply['stopReason'] = 'end_turn';
  if (tools.length > 0 && choice !== 'none' && !hasToolResult(user)) {
    const tool = (choice === 'tool' && tools.find((t) => t.name === (body.tool_choice as Json).name)) || tools[0];
    blocks.push({ type: 'tool_use', id: `toolu_${randomBytes(12).toString('hex')}`, name: String(tool.name), input: toolInput(tool) });
    stopReason = 'tool_use';
  } else {
    const seen = images > 0 ? ` I see ${images} image${images === 1 ? '' : 's'}.` : '';
    const heard = hasToolResult(user) ? `Tool result received: ${said}` : `You said: ${said}`;
    blocks.push({ type: 'text', text: `Hello!${seen} ${heard}` });
  }
  let output = blocks.reduce((n, b) => n + blockTokens(b), 0);
  const max = Number(body.max_tokens);
  const last = blocks[blocks.length - 1];
  if (output > max && last.type === 'text') {
    // cut the text so the whole answer fits max_tokens (4 characters a token)
    const room = Math.max(0, max - (output - blockTokens(last)));
    last.text = last.text.slice(0, room * 4);
    output = blocks.reduce((n, b) => n + blockTokens(b), 0);
    stopReason = 'max_tokens';
  }
  return {
    blocks,
    stopReason,
    usage: { input_tokens: inputTokens, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
}

/** A block as it opens in a stream: its payload comes in the deltas. */
export function openingOf(b: SimBlock): Json {
  if (b.type === 'text') return { type: 'text', text: '' };
  if (b.type === 'thinking') return { type: 'thinking', thinking: '', signature: '' };
  return { type: 'tool_use', id: b.id, name: b.name, input: {} };
}

/** The deltas of a block: text in word-sized pieces, thinking then its signature, tool input as JSON pieces. */
export function deltasOf(b: SimBlock): Json[] {
  const pieces = (s: string): string[] => s.match(/\S+\s*|\s+/g) ?? [];
  if (b.type === 'text') return pieces(b.text).map((text) => ({ type: 'text_delta', text }));
  if (b.type === 'thinking') {
    return [...pieces(b.thinking).map((thinking) => ({ type: 'thinking_delta', thinking })), { type: 'signature_delta', signature: b.signature }];
  }
  const json = JSON.stringify(b.input);
  const parts: Json[] = [];
  for (let i = 0; i < json.length; i += 8) parts.push({ type: 'input_json_delta', partial_json: json.slice(i, i + 8) });
  return parts;
}
