const LF = 0x0a;
const CR = 0x0d;

/** End of the last blank line (`\n\n` or `\n\r\n`) in `b`, or -1. */
function lastBoundaryEnd(b: Buffer): number {
  const i = b.lastIndexOf('\n\n');
  const j = b.lastIndexOf('\n\r\n');
  return Math.max(i < 0 ? -1 : i + 2, j < 0 ? -1 : j + 3);
}

/**
 * Cuts an upstream SSE byte stream at event boundaries, so the client only ever receives whole events: a chunk is
 * relayed up to its last blank line, the rest waits for the next chunk. The part held back is one incomplete
 * event, bounded by `maxEventBytes` (kept as its chunks, never re-scanned: each byte is searched once).
 */
export class SseFramer {
  private held: Buffer[] = [];
  private heldBytes = 0;

  constructor(private readonly maxEventBytes: number) {}

  /** Bytes of an incomplete event held back. */
  get pending(): number {
    return this.heldBytes;
  }

  /** The whole events completed by this chunk (with what was held), or undefined when none is complete yet. Throws past the bound. */
  push(chunk: Buffer): Buffer | undefined {
    let end = lastBoundaryEnd(chunk);
    if (end < 0 && this.heldBytes > 0 && chunk.length > 0) end = this.spanningEnd(chunk);
    if (end < 0) {
      this.hold(chunk);
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

  private hold(part: Buffer): void {
    this.held.push(part);
    this.heldBytes += part.length;
    if (this.heldBytes > this.maxEventBytes) throw new Error(`an upstream event exceeds ${this.maxEventBytes} bytes`);
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
