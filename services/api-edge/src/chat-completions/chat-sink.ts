import type { Response } from 'express';
import { drained, sinkOn, type MessagesSink, type RelayedHeaders } from '../chat/messages-sink';
import { chatCompletionOf, chatError, chatErrorOfUpstream, type ChatAnswerContext } from './chat-response';
import { ChatStreamTranslator } from './chat-stream.translator';
import { isObject } from './chat-messages';

/** Upstream headers a chat client can use (its retry logic reads both) and the gateway's timing; the vendor's own headers stay behind. */
const KEPT = /^(retry-after|x-should-retry|server-timing)$/i;

export function keptHeaders(h: RelayedHeaders): RelayedHeaders {
  const out: RelayedHeaders = {};
  for (const [k, v] of Object.entries(h)) if (KEPT.test(k)) out[k] = v;
  return out;
}

/** The headers a chat stream opens with: the upstream's kept ones, then the event stream's own. */
export const sseHeaders = (headers: RelayedHeaders): RelayedHeaders => ({
  ...keptHeaders(headers),
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
});

/** How a translating sink writes the client's protocol (see translatingSink). */
export interface AnswerTranslation {
  /** A whole answer with an error status, in the client's error envelope. */
  error(status: number, body: Buffer): unknown;
  /** A whole answer's parsed body, in the client's protocol. */
  answer(body: Record<string, unknown>): unknown;
  /** What a whole answer that is not a JSON object becomes (answered 502). */
  unreadable: unknown;
  /** Each batch of whole stream events, translated ('' when nothing is due yet). */
  push(events: Buffer | string): string;
  /** The closing event of a stream that ended with an error. */
  fail(type: string, message: string): string;
}

/**
 * A sink that answers in another protocol than the relay reads: a whole answer is translated at once; a stream one
 * batch of whole events at a time, written as it comes with the client's backpressure, so no more of an answer is
 * held than the relay holds for a pass-through.
 */
export function translatingSink(res: Response, t: AnswerTranslation): MessagesSink {
  return sinkOn(res, {
    whole(status, headers, body) {
      res.status(status).set(keptHeaders(headers));
      if (status >= 300) {
        res.json(t.error(status, body));
        return;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        // charged by the fallback rule like a pass-through; the client is told the answer was unreadable
      }
      if (isObject(parsed)) res.json(t.answer(parsed));
      else res.status(502).json(t.unreadable);
    },
    open(headers) {
      res.writeHead(200, sseHeaders(headers));
    },
    events(chunk) {
      const out = t.push(chunk);
      if (out === '') return undefined;
      return res.write(out) ? undefined : drained(res);
    },
    end(error) {
      if (error) res.end(t.fail(error.type, error.message));
      else res.end();
    },
  });
}

/**
 * The chat-completions end of a messages call (the answer half of docs/chat.md): the relay writes the messages
 * protocol here as it would to a client, and the client gets chat-completions (without an error, the translation
 * writes `[DONE]` on message_stop).
 */
export function chatSink(res: Response, o: ChatAnswerContext & { includeUsage: boolean }): MessagesSink {
  const stream = new ChatStreamTranslator(o);
  return translatingSink(res, {
    error: (status, body) => chatErrorOfUpstream(status, body),
    answer: (msg) => chatCompletionOf(msg, o),
    unreadable: chatError('bad_gateway', 'The upstream answer could not be read'),
    push: (events) => stream.push(events),
    fail: (type, message) => stream.fail(type, message),
  });
}
