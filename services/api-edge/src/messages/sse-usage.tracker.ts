/**
 * Follows a messages event stream as it is relayed, without changing it: the usage the upstream reports
 * (message_start: input and cache tokens; message_delta: the final output tokens) and the output relayed so far
 * (text, thinking and tool-input characters), which prices a stream that ends early.
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
    if (u && typeof u === 'object') {
      this.take(u as Json);
      this.finalUsage = num((u as Json).output_tokens) !== undefined;
    }
  }

  private onEvent(block: string): void {
    let data = '';
    for (const line of block.split(/\r?\n/)) if (line.startsWith('data:')) data += line.slice(line[5] === ' ' ? 6 : 5);
    if (data === '') return;
    let e: Json;
    try {
      e = JSON.parse(data) as Json;
    } catch {
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
