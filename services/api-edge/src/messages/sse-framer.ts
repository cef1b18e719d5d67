const LF = 0x0a;
const CR = 0x0d;

/** End of the last blank line (`\n\n` or `\n\r\n`) in `b`, or -1. */
function lastBoundaryEnd(b: Buffer): number {
  const i = b.lastIndexOf('\n\n');
  const j = b.lastIndexOf('\n\r\n');
  return Math.max(i < 0 ? -1 : i + 2, j < 0 ? -1 : j + 3);
}

/** An upstream event longer than the bound: the stream cannot go on (its start is dropped, never relayed). */
export class SseEventTooLarge extends Error {
  constructor(readonly maxEventBytes: number) {
    super(`an upstream event exceeds ${maxEventBytes} bytes`);
  }
}

/**
 * Cuts an upstream SSE byte stream at event boundaries, so the client only ever receives whole events: a chunk is
 * relayed up to its last blank line, the rest waits for the next chunk. The part held back is one incomplete
 * event, bounded by `maxEventBytes` (kept as its chunks, never re-scanned: each byte is searched once). The whole
 * events before an oversized one still go out: the chunk that overflows returns them, and the overflow is thrown by
 * the next `push` (or by `end`).
 */
export class SseFramer {
  private held: Buffer[] = [];
  private heldBytes = 0;
  private overflow: SseEventTooLarge | undefined;

  constructor(private readonly maxEventBytes: number) {}

  /** Bytes of an incomplete event held back. */
  get pending(): number {
    return this.heldBytes;
  }

  /** The whole events completed by this chunk (with what was held), or undefined when none is complete yet. Throws past the bound. */
  push(chunk: Buffer): Buffer | undefined {
    this.throwIfOverflowed();
    let end = lastBoundaryEnd(chunk);
    if (end < 0 && this.heldBytes > 0 && chunk.length > 0) end = this.spanningEnd(chunk);
    if (end < 0) {
      this.hold(chunk);
      this.throwIfOverflowed();
      return undefined;
    }
    let out: Buffer;
    if (this.heldBytes === 0) out = end === chunk.length ? chunk : chunk.subarray(0, end);
    else {
      this.held.push(chunk.subarray(0, end));
      out = Buffer.concat(this.held, this.heldBytes + end);
      this.held = [];
      this.heldBytes = 0;
    }
    if (end < chunk.length) this.hold(chunk.subarray(end));
    return out;
  }

  /** At the upstream's end: throws when the last event overflowed (what was whole before it has been returned). */
  end(): void {
    this.throwIfOverflowed();
  }

  // a method, not an inline check: after `this.hold()` the compiler still narrows an inline `this.overflow` to
  // undefined from the check above it
  private throwIfOverflowed(): void {
    if (this.overflow) throw this.overflow;
  }

  private hold(part: Buffer): void {
    this.held.push(part);
    this.heldBytes += part.length;
    if (this.heldBytes <= this.maxEventBytes) return;
    this.overflow = new SseEventTooLarge(this.maxEventBytes);
    this.held = [];
    this.heldBytes = 0;
  }

  /** A blank line split across the held bytes and this chunk (the held part ends in `\n` or `\n\r`). */
  private spanningEnd(chunk: Buffer): number {
    const last = this.held[this.held.length - 1];
    const a = last[last.length - 1];
    const b = last.length > 1 ? last[last.length - 2] : this.held.length > 1 ? this.held[this.held.length - 2].at(-1) : undefined;
    if (a === LF && chunk[0] === LF) return 1;
    if (a === LF && chunk[0] === CR && chunk[1] === LF) return 2;
    if (a === CR && b === LF && chunk[0] === LF) return 1;
    return -1;
  }
}
