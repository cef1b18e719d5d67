import { isObject, type Json } from '../chat-completions/chat-messages';
import { messageIdOf, messagesUsageOf, stopReasonOf, type MessagesUsage } from './chat-to-messages';

const event = (type: string, data: Json) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/**
 * Chat-completion chunks → the messages protocol's event stream, in the order its clients expect: message_start;
 * per block content_block_start, its deltas (text_delta; a tool call's input_json_delta pieces), content_block_stop;
 * then message_delta (the stop reason and the usage) and message_stop, written when the upstream's `[DONE]` comes
 * (the usage chunk comes just before it). One chunk at a time: only the open block and the usage are held.
 */
export class MessagesFromChatStream {
  private started = false;
  private index = -1;
  /** The open block: text, or the chat index of the tool call it is. */
  private open: { kind: 'text' } | { kind: 'tool'; call: number } | undefined;
  private stop: string | null = null;
  private usage: MessagesUsage = messagesUsageOf(undefined);

  constructor(private readonly model: string) {}

  /** Whole SSE events of chat completions → the messages events they make ('' when none). */
  push(events: Buffer | string): string {
    let out = '';
    const text = typeof events === 'string' ? events : events.toString('utf8');
    for (const block of text.split(/\r?\n\r?\n/)) {
      let data = '';
      for (const line of block.split(/\r?\n/)) if (line.startsWith('data:')) data += line.slice(line[5] === ' ' ? 6 : 5);
      if (data === '') continue;
      if (data === '[DONE]') {
        out += this.finish();
        continue;
      }
      try {
        const c: unknown = JSON.parse(data);
        if (isObject(c)) out += this.translate(c);
      } catch {
        // not a chunk: skipped
      }
    }
    return out;
  }

  private start(id: unknown): string {
    if (this.started) return '';
    this.started = true;
    // chat reports the usage at the end: the start says 0 (message_delta carries the counts)
    const message = {
      id: messageIdOf(id),
      type: 'message',
      role: 'assistant',
      model: this.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: this.usage,
    };
    return event('message_start', { message });
  }

  private close(): string {
    if (!this.open) return '';
    this.open = undefined;
    return event('content_block_stop', { index: this.index });
  }

  private translate(c: Json): string {
    let out = this.start(c.id);
    if (isObject(c.usage)) this.usage = messagesUsageOf(c.usage);
    const choice = Array.isArray(c.choices) && isObject(c.choices[0]) ? c.choices[0] : undefined;
    if (!choice) return out;
    const d = isObject(choice.delta) ? choice.delta : {};
    if (typeof d.content === 'string' && d.content !== '') {
      if (this.open?.kind !== 'text') {
        out += this.close();
        this.open = { kind: 'text' };
        out += event('content_block_start', { index: ++this.index, content_block: { type: 'text', text: '' } });
      }
      out += event('content_block_delta', { index: this.index, delta: { type: 'text_delta', text: d.content } });
    }
    for (const t of Array.isArray(d.tool_calls) ? d.tool_calls.filter(isObject) : []) {
      const fn = isObject(t.function) ? t.function : {};
      const call = typeof t.index === 'number' ? t.index : 0;
      if (!(this.open?.kind === 'tool' && this.open.call === call)) {
        out += this.close();
        this.open = { kind: 'tool', call };
        out += event('content_block_start', { index: ++this.index, content_block: { type: 'tool_use', id: String(t.id), name: String(fn.name), input: {} } });
      }
      if (typeof fn.arguments === 'string' && fn.arguments !== '') {
        out += event('content_block_delta', { index: this.index, delta: { type: 'input_json_delta', partial_json: fn.arguments } });
      }
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
      out += this.close();
      this.stop = stopReasonOf(choice.finish_reason);
    }
    return out;
  }

  private finish(): string {
    const out = this.start(undefined) + this.close();
    return (
      out + event('message_delta', { delta: { stop_reason: this.stop ?? 'end_turn', stop_sequence: null }, usage: this.usage }) + event('message_stop', {})
    );
  }
}
