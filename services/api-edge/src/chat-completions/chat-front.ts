import { DomainError } from '@gmg/errors';
import { parseMessagesRequest, type MessagesRequest } from '../chat/messages-request';
import { parseChatRequest, type ChatRequest } from './chat-request';

/**
 * The messages-protocol version a translated call is sent with: the chat-completions protocol has no version
 * header, and the translation (chat-request.ts) writes this version's body.
 */
export const CHAT_UPSTREAM_VERSION = '2023-06-01';

/** A chat-completions body → the messages call it becomes: the body sent upstream and what the gateway reads of it (hold, record). */
export function chatCallOf(raw: Buffer): { chat: ChatRequest; request: MessagesRequest; body: Buffer; parsed: Record<string, unknown> } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new DomainError('invalid_json', 'Request body is not valid JSON');
  }
  const chat = parseChatRequest(parsed);
  const body = Buffer.from(JSON.stringify(chat.body));
  // measured as /v1/messages measures its bodies: the same input bound, so the same hold for the same conversation
  return { chat, request: parseMessagesRequest(body), body, parsed: parsed as Record<string, unknown> };
}
