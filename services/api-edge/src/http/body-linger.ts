import type { IncomingMessage } from 'node:http';
import type { Response } from 'express';

/** How long an oversized body may keep flowing (discarded, never buffered) after its refusal has been sent. */
export const LINGER_MS = 1000;

/**
 * After the refusal of a body it has not read (413 over the cap, 503 over the body budget): Node reads the rest of the body and discards it (to keep the connection), so
 * the client can read the answer while it is still sending — closing at once would reset the connection and could
 * lose the answer. Past LINGER_MS a body still flowing gets its connection closed, so a client that keeps sending
 * costs nothing more. A body that ends within the linger leaves a healthy keep-alive connection, which the client may
 * already be reusing for its next request: the timer is then cancelled (a timer left running killed that next request,
 * found by `npm run chaos`, "bad input": `other side closed` on 1–21 of 2,000 answers).
 */
export const lingerThenClose = (req: IncomingMessage, res: Response): void => {
  res.once('finish', () => {
    if (req.complete) return;
    const socket = req.socket;
    const cancel = (): void => clearTimeout(timer);
    const timer = setTimeout(() => {
      socket.off('close', cancel);
      if (!req.complete) socket.destroy();
    }, LINGER_MS);
    timer.unref();
    req.once('end', cancel);
    socket.once('close', cancel);
  });
};
