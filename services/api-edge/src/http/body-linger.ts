import type { IncomingMessage } from 'node:http';
import type { Response } from 'express';

/** How long an oversized body may keep flowing (discarded, never buffered) after its refusal has been sent. */
const LINGER_MS = 1000;

/**
 * After the refusal of a body it has not read (413 over the cap, 503 over the body budget): Node reads the rest of the body and discards it (to keep the connection), so
 * the client can read the answer while it is still sending — closing at once would reset the connection and could
 * lose the answer. Past LINGER_MS the connection is closed, so a client that keeps sending costs nothing more.
 */
export const lingerThenClose = (req: IncomingMessage, res: Response): void => {
  res.once('finish', () => {
    if (req.complete) return;
    const socket = req.socket;
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  });
};
