/**
 * The structural rules of the messages protocol that its vendor enforces with a 400 before any model runs, as one
 * pure check: the simulator's messages mode refuses what this finds, and the chat-completions translation is tested
 * against it (so a translation bug fails a test instead of a customer's call).
 *
 * Sources (the vendor's public documentation; the wording of each problem follows the vendor's 400 messages where
 * they are known, otherwise marked "(guess)" below):
 * - Messages API reference, `messages` and `system` (https://docs.anthropic.com/en/api/messages): alternating user
 *   and assistant turns, "consecutive user or assistant turns in your request will be combined into a single turn"
 *   (so consecutive same-role turns are accepted, not refused); no "system" role for input messages, the top-level
 *   `system` instead; `max_tokens` required; text content blocks must be non-empty ("messages: text content blocks
 *   must be non-empty"; "all messages must have non-empty content except for the optional final assistant
 *   message"); the first message from the user.
 * - Tool use (https://docs.anthropic.com/en/docs/build-with-claude/tool-use/implement-tool-use): tool results must
 *   immediately follow their tool use, in the next (user) message, with the tool_result blocks first in its content;
 *   each tool_result answers a tool_use of the previous message ("`tool_use` ids were found without `tool_result`
 *   blocks immediately after"; "unexpected `tool_use_id` found in `tool_result` blocks").
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const blocksOf = (content: unknown): Json[] => (Array.isArray(content) ? content.filter(isObject) : []);

/** Text blocks of a content list (a top-level `system`, a tool result's content) that are empty or not text. */
function textProblems(list: unknown, at: string): string[] {
  if (typeof list === 'string') return [];
  if (!Array.isArray(list)) return [`${at}: must be a string or an array of content blocks`];
  return list.flatMap((b, j) =>
    isObject(b) && b.type === 'text' && (typeof b.text !== 'string' || b.text === '') ? [`${at}.${j}.text: text content blocks must be non-empty`] : [],
  );
}

function imageProblem(b: Json, at: string): string[] {
  const src = isObject(b.source) ? b.source : undefined;
  const ok = src?.type === 'url' ? typeof src.url === 'string' : src?.type === 'base64' && typeof src.data === 'string' && /^[A-Za-z0-9+/]+=*$/.test(src.data);
  return ok ? [] : [`${at}.source: an image needs base64 data or a url`];
}

/** Problems of one block of message `i` (role `role`). */
function blockProblems(b: Json, at: string, role: string): string[] {
  switch (b.type) {
    case 'text':
      return typeof b.text === 'string' && b.text !== '' ? [] : [`${at}.text: text content blocks must be non-empty`];
    case 'image':
      return role === 'user' ? imageProblem(b, at) : [`${at}: image blocks are only accepted in user messages (guess)`];
    case 'tool_use':
      if (role !== 'assistant') return [`${at}: tool_use blocks are only accepted in assistant messages (guess)`];
      return typeof b.id === 'string' && b.id !== '' && typeof b.name === 'string' && isObject(b.input)
        ? []
        : [`${at}: tool_use needs id, name and an input object`];
    case 'tool_result':
      if (role !== 'user') return [`${at}: tool_result blocks are only accepted in user messages (guess)`];
      if (typeof b.tool_use_id !== 'string' || b.tool_use_id === '') return [`${at}.tool_use_id: Field required`];
      return b.content === undefined ? [] : textProblems(b.content, `${at}.content`);
    default:
      // other block types (thinking, documents, server tools) are not checked here
      return [];
  }
}

/** Problems of message `i` alone: its role, and that its content is non-empty and made of valid blocks. */
function messageProblems(m: unknown, i: number, last: boolean): string[] {
  const at = `messages.${i}`;
  if (!isObject(m)) return [`${at}: must be an object {role, content}`];
  if (m.role === 'system')
    return [`${at}.role: Unexpected role "system". The Messages API accepts a top-level \`system\` parameter, not "system" as an input message role.`];
  if (m.role !== 'user' && m.role !== 'assistant') return [`${at}.role: must be user or assistant`];
  const mayBeEmpty = last && m.role === 'assistant';
  const empty = `${at}: all messages must have non-empty content except for the optional final assistant message`;
  if (typeof m.content === 'string') return m.content === '' && !mayBeEmpty ? [empty] : [];
  if (!Array.isArray(m.content)) return [`${at}.content: must be a string or an array of content blocks`];
  if (m.content.length === 0 && !mayBeEmpty) return [empty];
  return m.content.flatMap((b, j) =>
    isObject(b) ? blockProblems(b, `${at}.content.${j}`, m.role as string) : [`${at}.content.${j}: must be a content block`],
  );
}

/** Tool pairing: each assistant turn's tool_use ids answered first thing in the next user turn, and nothing else answered. */
function toolProblems(messages: Json[]): string[] {
  const out: string[] = [];
  for (const [i, m] of messages.entries()) {
    const blocks = blocksOf(m.content);
    if (m.role === 'assistant') {
      const asked = blocks.filter((b) => b.type === 'tool_use').map((b) => String(b.id));
      if (asked.length === 0) continue;
      const next = messages[i + 1];
      const answered = new Set(next?.role === 'user' ? leadingResults(blocksOf(next.content)) : []);
      const missing = asked.filter((id) => !answered.has(id));
      if (missing.length > 0) {
        out.push(
          `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
      continue;
    }
    const prev = messages[i - 1];
    const asked = new Set(prev?.role === 'assistant' ? blocksOf(prev.content).flatMap((b) => (b.type === 'tool_use' ? [String(b.id)] : [])) : []);
    let seenOther = false;
    for (const [j, b] of blocks.entries()) {
      if (b.type !== 'tool_result') {
        seenOther = true;
        continue;
      }
      if (seenOther) out.push(`messages.${i}.content.${j}: tool_result blocks must come first in the content, before any other block (guess)`);
      if (!asked.has(String(b.tool_use_id))) {
        out.push(
          `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(b.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
        );
      }
    }
  }
  return out;
}

/** The ids of the tool_result blocks at the start of a user turn's content. */
function leadingResults(blocks: Json[]): string[] {
  const ids: string[] = [];
  for (const b of blocks) {
    if (b.type !== 'tool_result') break;
    ids.push(String(b.tool_use_id));
  }
  return ids;
}

/**
 * Everything the vendor would refuse in a messages request body, in the vendor's words (empty when it would take
 * it). Only the structural rules: model names, token budgets and sampling ranges are the caller's business.
 */
export function messagesBodyProblems(body: unknown): string[] {
  if (!isObject(body)) return ['body: must be a JSON object'];
  const out: string[] = [];
  if (typeof body.model !== 'string' || body.model === '') out.push('model: Field required');
  if (body.max_tokens === undefined) out.push('max_tokens: Field required');
  else if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1) out.push('max_tokens: must be an integer >= 1');
  if (body.system !== undefined) out.push(...textProblems(body.system, 'system'));
  if (body.tool_choice !== undefined && (!Array.isArray(body.tools) || body.tools.length === 0))
    out.push('tool_choice: may only be specified while providing tools (guess)');
  if (!Array.isArray(body.messages) || body.messages.length === 0) return [...out, 'messages: at least one message is required'];
  const messages = body.messages as unknown[];
  out.push(...messages.flatMap((m, i) => messageProblems(m, i, i === messages.length - 1)));
  if (isObject(messages[0]) && messages[0].role !== 'user') out.push('messages: first message must use the "user" role');
  if (messages.every(isObject)) out.push(...toolProblems(messages));
  return out;
}
