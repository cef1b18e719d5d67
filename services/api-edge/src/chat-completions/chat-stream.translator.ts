import { isObject, type Json } from './chat-messages';
import { chatError, chatIdOf, finishReasonOf, usageOf, type ChatAnswerContext } from './chat-response';

export interface ChatStreamOptions extends ChatAnswerContext {
  /** `stream_options.include_usage`: `usage: null` on every chunk, then one chunk with the usage and no choices. */
  includeUsage: boolean;
}

const frame = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;

/** The JSON of each whole SSE event in `text` (events without data, or with unparsable data, are skipped). */
function eventsOf(text: string): Json[] {
  const out: Json[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let data = '';
    for (const line of block.split(/\r?\n/)) if (line.startsWith('data:')) data += line.slice(line[5] === ' ' ? 6 : 5);
    if (data === '') continue;
    try {
      const e: unknown = JSON.parse(data);
      if (isObject(e)) out.push(e);
    } catch {
      // not an event this translation knows: skipped
    }
  }
  return out;
}

/**
 * Messages stream events → chat-completion chunks, one event at a time (a translation holds no more than the
 * upstream usage so far and which block index is which tool call): text deltas become `content` deltas, a
 * tool_use block its `tool_calls` entry and its input_json_delta pieces the `arguments` pieces, message_delta the
 * `finish_reason`; message_stop the usage chunk (when asked) and `data: [DONE]`. Thinking is not shown.
 */
export class ChatStreamTranslator {
  private id = chatIdOf(undefined);
  private usage: Json = {};
  /**
   * Block index → its tool call: the chat index (chat numbers tool calls alone, messages numbers every block), the
   * input the block opened with, and whether any arguments were sent yet.
   */
  private readonly tools = new Map<number, { index: number; input: unknown; sent: boolean }>();
  private finished = false;

  constructor(private readonly o: ChatStreamOptions) {}

  /** True once message_stop was translated (the chat stream is complete). */
  get done(): boolean {
    return this.finished;
  }

  /** Whole SSE events of the messages protocol → the chat chunks they make ('' when none). */
  push(events: Buffer | string): string {
    let out = '';
    for (const e of eventsOf(typeof events === 'string' ? events : events.toString('utf8'))) out += this.translate(e);
    return out;
  }

  /** The closing frame of a stream the gateway could not finish: an error object (the chat clients raise it), no `[DONE]`. */
  fail(type: string, message: string): string {
    return frame(chatError(type, message));
  }

  private chunk(delta: Json, finishReason: string | null = null): string {
    const c: Json = {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.o.created,
      model: this.o.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    };
    if (this.o.includeUsage) c.usage = null;
    return frame(c);
  }

  private takeUsage(u: unknown): void {
    if (isObject(u)) for (const [k, v] of Object.entries(u)) if (typeof v === 'number') this.usage[k] = v;
  }

  private translate(e: Json): string {
    switch (e.type) {
      case 'message_start': {
        const m = isObject(e.message) ? e.message : {};
        this.id = chatIdOf(m.id);
        this.takeUsage(m.usage);
        return this.chunk({ role: 'assistant', content: '', refusal: null });
      }
      case 'content_block_start': {
        const b = isObject(e.content_block) ? e.content_block : {};
        if (b.type !== 'tool_use' || typeof e.index !== 'number') return '';
        const index = this.tools.size;
        this.tools.set(e.index, { index, input: b.input, sent: false });
        return this.chunk({ tool_calls: [{ index, id: String(b.id), type: 'function', function: { name: String(b.name), arguments: '' } }] });
      }
      case 'content_block_delta': {
        const d = isObject(e.delta) ? e.delta : {};
        if (d.type === 'text_delta' && typeof d.text === 'string') return this.chunk({ content: d.text });
        const tool = typeof e.index === 'number' ? this.tools.get(e.index) : undefined;
        if (d.type === 'input_json_delta' && typeof d.partial_json === 'string' && d.partial_json !== '' && tool) {
          tool.sent = true;
          return this.chunk({ tool_calls: [{ index: tool.index, function: { arguments: d.partial_json } }] });
        }
        return '';
      }
      case 'content_block_stop': {
        // a tool call whose input came with no delta (a tool without parameters) still ends as the whole answer's
        // arguments ('{}', not ''): the assembled stream must parse like the non-streamed answer
        const tool = typeof e.index === 'number' ? this.tools.get(e.index) : undefined;
        if (!tool || tool.sent) return '';
        tool.sent = true;
        return this.chunk({ tool_calls: [{ index: tool.index, function: { arguments: JSON.stringify(isObject(tool.input) ? tool.input : {}) } }] });
      }
      case 'message_delta': {
        this.takeUsage(e.usage);
        const d = isObject(e.delta) ? e.delta : {};
        return this.chunk({}, finishReasonOf(d.stop_reason) ?? 'stop');
      }
      case 'message_stop': {
        this.finished = true;
        const usage = this.o.includeUsage
          ? frame({ id: this.id, object: 'chat.completion.chunk', created: this.o.created, model: this.o.model, choices: [], usage: usageOf(this.usage) })
          : '';
        return `${usage}data: [DONE]\n\n`;
      }
      case 'error': {
        const err = isObject(e.error) ? e.error : {};
        return this.fail(typeof err.type === 'string' ? err.type : 'upstream_error', typeof err.message === 'string' ? err.message : 'upstream error');
      }
      default:
        return '';
    }
  }
}
