/**
 * The `Server-Timing` header of a chat answer (docs/messages.md, "Server-Timing"): the gateway's own time before
 * the upstream call (`gw`) and, on a whole answer, the upstream's (`upstream`: the first request sent to the whole
 * answer read, failovers included) and the total (`total`), in milliseconds from the request's arrival. A stream
 * gets its headers before its first byte, so only `gw`.
 */
export class CallTiming {
  private upstreamAt: number | undefined;
  private answeredAt: number | undefined;

  /** `receivedAt`: `performance.now()` when the request arrived. */
  constructor(private readonly receivedAt: number) {}

  /** Before each upstream request: the first one ends the gateway's part. */
  upstreamStarted(): void {
    this.upstreamAt ??= performance.now();
  }

  /** When an upstream's whole answer has been read. */
  answered(): void {
    this.answeredAt = performance.now();
  }

  /** The header of a stream: the gateway's time before its upstream call. */
  streamHeader(): string {
    return `gw;dur=${ms((this.upstreamAt ?? performance.now()) - this.receivedAt)}`;
  }

  /** The header of a whole answer: the gateway's time before the upstream call, the upstream's, and the total so far. */
  wholeHeader(): string {
    const now = performance.now();
    const up = this.upstreamAt ?? now;
    return `gw;dur=${ms(up - this.receivedAt)}, upstream;dur=${ms((this.answeredAt ?? now) - up)}, total;dur=${ms(now - this.receivedAt)}`;
  }
}

const ms = (d: number): string => (Math.round(Math.max(0, d) * 100) / 100).toFixed(2);
