/**
 * Follows an upstream's event stream as it is relayed, without changing it: the usage the upstream reports
 * (messages: message_start's input and cache tokens, message_delta's final output tokens; chat completions: the
 * usage chunk, whose `prompt_tokens` include the cached ones) and the output relayed so far (text, thinking and
 * tool-input characters), which prices a stream that ends early. `message_stop` / `data: [DONE]` end a stream.
 */
export interface ObservedUsage {
  inputTokens?: number;
  cacheWriteTokens?: number;
  cacheReadTokens?: number;
  outputTokens?: number;
}

type Json = Record<string, unknown>;
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);

export class SseUsageTracker {
  readonly usage: ObservedUsage = {};
  /** message_delta (the final usage) was seen. */
  finalUsage = false;
  /** message_stop was seen: the stream is complete. */
  stopped = false;
  relayedOutputChars = 0;
  /** Whole events only (SseFramer cuts them): nothing is kept between calls, so memory stays flat. */
  push(events: Uint8Array): void {
    const text = Buffer.isBuffer(events) ? events.toString('utf8') : Buffer.from(events.buffer, events.byteOffset, events.byteLength).toString('utf8');
    for (const block of text.split(/\r?\n\r?\n/)) if (block !== '') this.onEvent(block);
  }

  /** Usage from a whole (non-streamed) message body. */
  readMessage(msg: unknown): void {
    const u = (msg as Json | null)?.usage;
    // a chat completion (some compatible servers leave out `object`: its `choices` say it)
    if ((msg as Json | null)?.object === 'chat.completion' || Array.isArray((msg as Json | null)?.choices)) {
      this.takeChat(u);
      return;
    }
    if (u && typeof u === 'object') {
      this.take(u as Json);
      this.finalUsage = num((u as Json).output_tokens) !== undefined;
    }
  }

  private onEvent(block: string): void {
    let data = '';
    for (const line of block.split(/\r?\n/)) if (line.startsWith('data:')) data += line.slice(line[5] === ' ' ? 6 : 5);
    if (data === '') return;
    if (data === '[DONE]') {
      this.stopped = true;
      return;
    }
    let e: Json;
    try {
      e = JSON.parse(data) as Json;
    } catch {
      return;
    }
    if (e.object === 'chat.completion.chunk' || (e.type === undefined && Array.isArray(e.choices))) {
      this.onChunk(e);
      return;
    }
    switch (e.type) {
      case 'message_start':
        this.take(((e.message as Json | undefined)?.usage as Json | undefined) ?? {});
        break;
      case 'content_block_delta': {
        const d = (e.delta as Json | undefined) ?? {};
        const piece = d.text ?? d.thinking ?? d.partial_json;
        if (typeof piece === 'string') this.relayedOutputChars += piece.length;
        break;
      }
      case 'message_delta':
        this.take((e.usage as Json | undefined) ?? {});
        this.finalUsage = true;
        break;
      case 'message_stop':
        this.stopped = true;
        break;
    }
  }

  /** A chat-completions chunk: its text and tool-argument pieces, and the usage chunk. */
  private onChunk(e: Json): void {
    if (e.usage) this.takeChat(e.usage);
    const choices = e.choices as Json[] | undefined;
    const d = choices?.[0]?.delta as Json | undefined;
    if (!d) return;
    if (typeof d.content === 'string') this.relayedOutputChars += d.content.length;
    if (typeof d.reasoning_content === 'string') this.relayedOutputChars += d.reasoning_content.length;
    if (Array.isArray(d.tool_calls)) {
      for (const t of d.tool_calls as Json[]) {
        const args = (t.function as Json | undefined)?.arguments;
        if (typeof args === 'string') this.relayedOutputChars += args.length;
      }
    }
  }

  /** A chat usage object: its prompt tokens hold the cached ones (`prompt_tokens_details.cached_tokens`), billed apart. */
  private takeChat(u: unknown): void {
    if (!u || typeof u !== 'object') return;
    const x = u as Json;
    const prompt = num(x.prompt_tokens);
    const cached = num((x.prompt_tokens_details as Json | undefined)?.cached_tokens) ?? 0;
    if (prompt !== undefined) {
      this.usage.inputTokens = Math.max(0, prompt - cached);
      this.usage.cacheReadTokens = cached;
    }
    const out = num(x.completion_tokens);
    if (out !== undefined) {
      this.usage.outputTokens = out;
      this.finalUsage = true;
    }
  }

  /** Later reports win field by field (message_delta carries the final output count, sometimes input too). */
  private take(u: Json): void {
    const set = (k: keyof ObservedUsage, v: unknown) => {
      const n = num(v);
      if (n !== undefined) this.usage[k] = n;
    };
    set('inputTokens', u.input_tokens);
    set('cacheWriteTokens', u.cache_creation_input_tokens);
    set('cacheReadTokens', u.cache_read_input_tokens);
    set('outputTokens', u.output_tokens);
  }
}
