import type { Response } from 'express';
import { drained, sinkOn, type MessagesSink, type RelayedHeaders } from '../messages/messages-sink';
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

/**
 * The chat-completions end of a messages call (the answer half of docs/chat.md): the relay writes the messages
 * protocol here as it would to a client, and the client gets chat-completions. A whole answer is translated at
 * once; a stream one batch of whole events at a time, written as it comes with the client's backpressure, so no
 * more of an answer is held than the relay holds for /v1/messages.
 */
export function chatSink(res: Response, o: ChatAnswerContext & { includeUsage: boolean }): MessagesSink {
  const stream = new ChatStreamTranslator(o);
  return sinkOn(res, {
    whole(status, headers, body) {
      res.status(status).set(keptHeaders(headers));
      if (status >= 300) {
        res.json(chatErrorOfUpstream(status, body));
        return;
      }
      let msg: unknown;
      try {
        msg = JSON.parse(body.toString('utf8'));
      } catch {
        // charged by the fallback rule like on /v1/messages; the client is told the answer was unreadable
      }
      if (isObject(msg)) res.json(chatCompletionOf(msg, o));
      else res.status(502).json(chatError('bad_gateway', 'The upstream answer could not be read'));
    },
    open(headers) {
      res.writeHead(200, {
        ...keptHeaders(headers),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      });
    },
    events(chunk) {
      const out = stream.push(chunk);
      if (out === '') return undefined;
      return res.write(out) ? undefined : drained(res);
    },
    end(error) {
      // without an error the translation has written `[DONE]` on message_stop
      if (error) res.end(stream.fail(error.type, error.message));
      else res.end();
    },
  });
}
