import type { Response } from 'express';

export interface CapturedResponse {
  status: number;
  /** The bytes sent, when they fit in the cap. */
  body: Buffer;
  /** False when the answer was larger than the cap (then `body` is incomplete). */
  complete: boolean;
}

/**
 * Keeps a copy of what `res` sends (up to `maxBytes`) and calls `onEnd` once with it before the last bytes leave:
 * the answer is released only after `onEnd` settled, so whatever it records is in place when the client has it.
 */
export function captureResponse(res: Response, maxBytes: number, onEnd: (r: CapturedResponse) => Promise<void>): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const origWrite = res.write.bind(res) as (...a: unknown[]) => boolean;
  const origEnd = res.end.bind(res) as (...a: unknown[]) => Response;
  const keep = (chunk: unknown, enc: unknown): void => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof enc === 'string' ? (enc as BufferEncoding) : 'utf8');
    size += buf.length;
    if (size <= maxBytes) chunks.push(buf);
  };
  res.write = ((chunk: unknown, enc?: unknown, cb?: unknown) => {
    keep(chunk, enc);
    return origWrite(chunk, enc, cb);
  }) as Response['write'];
  res.end = ((chunk?: unknown, enc?: unknown, cb?: unknown) => {
    if (finished) return origEnd(chunk, enc, cb);
    finished = true;
    keep(chunk, enc);
    void onEnd({ status: res.statusCode, body: Buffer.concat(chunks), complete: size <= maxBytes }).finally(() => origEnd(chunk, enc, cb));
    return res;
  }) as Response['end'];
}
