import type { Response } from 'express';

export type RelayedHeaders = Record<string, string | string[]>;

/** An error the gateway adds at the end of a stream it cannot finish (vendor shape: `event: error`). */
export interface StreamError {
  type: string;
  message: string;
}

/**
 * Where a relayed messages answer goes. The relay (messages-relay.ts) speaks only to this, so another front
 * (a protocol translation) can reuse it with its own sink. Order: `whole` once, or `open` once, then `events`
 * any number of times, then `end` once.
 */
export interface MessagesSink {
  /** True once the client is gone before the answer was over. */
  readonly closed: boolean;
  /** Calls `fn` once when the client goes away before the answer is over; returns the unsubscribe. */
  onClose(fn: () => void): () => void;
  /** A whole answer: a non-streamed success, or an upstream refusal passed through. */
  whole(status: number, headers: RelayedHeaders, body: Buffer): void;
  /** Commits a stream (status 200 and the headers). */
  open(headers: RelayedHeaders): void;
  /** One or more whole SSE events, each ending in a blank line. A promise: wait for it before the next write (backpressure). */
  events(chunk: Buffer): Promise<void> | undefined;
  /** Ends a stream; with `error`, after one well-formed `event: error`. */
  end(error?: StreamError): void;
}

/** The stream error event in the vendor's envelope with the gateway's code (its clients raise it as an API error). */
export const errorEvent = (e: StreamError): string =>
  `event: error\ndata: ${JSON.stringify({ type: 'error', error: { code: 502, type: e.type, message: e.message } })}\n\n`;

/** Resolves when the client can take more, or is gone. */
export const drained = (res: Response) =>
  new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });

/**
 * A sink on an HTTP response: `how` writes the answer; the client side (whether it went away before its answer was
 * finished, and a hook for it) is the same for every protocol.
 */
export function sinkOn(res: Response, how: Omit<MessagesSink, 'closed' | 'onClose'>): MessagesSink {
  let gone = false;
  res.on('close', () => {
    if (!res.writableFinished) gone = true;
  });
  return {
    ...how,
    get closed() {
      return gone;
    },
    onClose(fn) {
      const h = () => {
        if (!res.writableFinished) fn();
      };
      res.on('close', h);
      return () => res.off('close', h);
    },
  };
}

/** The pass-through sink of POST /v1/messages: the upstream's bytes, as they are, to the HTTP client. */
export function httpSink(res: Response): MessagesSink {
  return sinkOn(res, {
    whole(status, headers, body) {
      res.status(status).set(headers).end(body);
    },
    open(headers) {
      res.writeHead(200, { ...headers, 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
    },
    events(chunk) {
      return res.write(chunk) ? undefined : drained(res);
    },
    end(error) {
      if (error) res.end(errorEvent(error));
      else res.end();
    },
  });
}
