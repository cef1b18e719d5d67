import type { Response } from 'express';
import type { MessagesChannel } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import { selectChannel, type MessagesAnswer, type MessagesUpstreamClient } from '@gmg/upstream';
import { SseUsageTracker } from './sse-usage.tracker';

export interface RelayInput {
  res: Response;
  channels: readonly MessagesChannel[];
  version: string;
  body: Buffer;
  stream: boolean;
  /** Client headers passed upstream as they are (e.g. `anthropic-beta`). */
  headers: Record<string, string>;
}

/**
 * How a relay ended. `complete`: the upstream's whole answer reached the client. `cut`: a stream ended early
 * after its first byte (client gone, or upstream died). `failed`: nothing of an answer was produced for the
 * client (an error passed through, no channel answered, or the client left before the first byte).
 */
export interface RelayOutcome {
  kind: 'complete' | 'cut' | 'failed';
  reason: string;
  channelId: string | null;
  tracker: SseUsageTracker;
  /** An error the gateway answers itself (nothing was sent yet): the caller throws it. */
  error?: DomainError;
}

/** Upstream statuses worth another channel, before the first byte only: rate limits, overload, server errors, our channel's credentials. */
const FAILS_OVER = (s: number) => s === 429 || s >= 500 || s === 401 || s === 402 || s === 403 || s === 408;

/** Upstream response headers the client gets (framing and hop-by-hop headers are the gateway's own). */
const RELAYED = /^(content-type|request-id|retry-after|x-should-retry|(anthropic|msgproto)-[a-z0-9-]+)$/i;

function relayedHeaders(h: MessagesAnswer['headers']): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && RELAYED.test(k)) out[k] = v;
  return out;
}

async function readAll(body: MessagesAnswer['body']): Promise<Buffer> {
  return Buffer.from(await body.arrayBuffer());
}

/** Resolves when the client can take more, or is gone. */
const drained = (res: Response) =>
  new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });

const errorEvent = (message: string) =>
  `event: error\ndata: ${JSON.stringify({ type: 'error', error: { code: 502, type: 'bad_gateway', message } })}\n\n`;

/**
 * Sends the request to the channels, best first, and relays the answer. Any failure before the first byte reaches
 * the client moves on to the next channel; after it, never (the client has part of one answer). A stream is
 * committed only when its first chunk has arrived, so an upstream dying before its first event fails over too.
 * Writes wait for the client to drain: a slow client slows the upstream read, and nothing piles up in memory.
 */
export async function relayMessages(client: MessagesUpstreamClient, logger: Logger, input: RelayInput): Promise<RelayOutcome> {
  const { res } = input;
  const tracker = new SseUsageTracker();
  const abort = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) abort.abort();
  };
  res.on('close', onClose);
  const gone = (channelId: string | null): RelayOutcome => ({ kind: 'failed', reason: 'client_closed', channelId, tracker });
  const tried = new Set<string>();
  let last: { status: number; headers: MessagesAnswer['headers']; body: Buffer; channelId: string } | undefined;
  try {
    for (let ch = selectChannel(input.channels); ch; ch = selectChannel(input.channels, { exclude: tried })) {
      tried.add(ch.id);
      if (abort.signal.aborted) return gone(null);
      let answer: MessagesAnswer;
      try {
        answer = await client.send({ target: ch, version: input.version, body: input.body, headers: input.headers, signal: abort.signal });
      } catch (err) {
        if (abort.signal.aborted) return gone(ch.id);
        logger.warn({ channel: ch.name, err: (err as Error).message }, 'messages upstream unreachable; trying the next channel');
        continue;
      }
      const isStream = /^text\/event-stream/i.test(String(answer.headers['content-type'] ?? ''));
      if (answer.status !== 200 || !isStream) {
        let body: Buffer;
        try {
          body = await readAll(answer.body);
        } catch (err) {
          if (abort.signal.aborted) return gone(ch.id);
          logger.warn({ channel: ch.name, err: (err as Error).message }, 'messages upstream died before its answer; trying the next channel');
          continue;
        }
        if (FAILS_OVER(answer.status)) {
          logger.warn({ channel: ch.name, status: answer.status }, 'messages upstream refused; trying the next channel');
          last = { status: answer.status, headers: answer.headers, body, channelId: ch.id };
          continue;
        }
        res.status(answer.status).set(relayedHeaders(answer.headers)).end(body);
        if (answer.status >= 300) return { kind: 'failed', reason: `upstream_${answer.status}`, channelId: ch.id, tracker };
        try {
          tracker.readMessage(JSON.parse(body.toString('utf8')));
        } catch {
          // an unparsable success is charged by the fallback rule (no final usage)
        }
        return { kind: 'complete', reason: 'answered', channelId: ch.id, tracker };
      }
      const it = answer.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      let first: IteratorResult<Buffer>;
      try {
        first = await it.next();
      } catch (err) {
        if (abort.signal.aborted) return gone(ch.id);
        logger.warn({ channel: ch.name, err: (err as Error).message }, 'messages stream died before its first event; trying the next channel');
        continue;
      }
      if (first.done) continue;
      return await pump(res, it, first.value, tracker, abort.signal, ch.id, answer, logger);
    }
  } finally {
    res.off('close', onClose);
  }
  if (last) {
    // every channel refused: the last refusal goes back as the upstream sent it (clients know 429/529 and retry)
    res.status(last.status).set(relayedHeaders(last.headers)).end(last.body);
    return { kind: 'failed', reason: `upstream_${last.status}`, channelId: last.channelId, tracker };
  }
  if (abort.signal.aborted) return gone(null);
  return {
    kind: 'failed',
    reason: 'no_channel_answered',
    channelId: null,
    tracker,
    error: new DomainError(tried.size === 0 ? 'service_unavailable' : 'bad_gateway', tried.size === 0 ? 'No upstream channel serves this model' : 'No upstream channel answered'),
  };
}

/** The committed stream: headers and first chunk out, then every chunk as it comes, flushed, at the client's pace. */
async function pump(
  res: Response,
  it: AsyncIterator<Buffer>,
  first: Buffer,
  tracker: SseUsageTracker,
  signal: AbortSignal,
  channelId: string,
  answer: MessagesAnswer,
  logger: Logger,
): Promise<RelayOutcome> {
  res.writeHead(200, { ...relayedHeaders(answer.headers), 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  let chunk: Buffer | undefined = first;
  while (chunk) {
    tracker.push(chunk);
    if (!res.write(chunk)) await drained(res);
    if (signal.aborted) return { kind: 'cut', reason: 'client_closed', channelId, tracker };
    try {
      const r = await it.next();
      chunk = r.done ? undefined : r.value;
    } catch (err) {
      if (signal.aborted) return { kind: 'cut', reason: 'client_closed', channelId, tracker };
      logger.warn({ channelId, err: (err as Error).message }, 'messages upstream died mid-stream');
      res.end(errorEvent('The upstream connection was lost mid-stream'));
      return { kind: 'cut', reason: 'upstream_lost', channelId, tracker };
    }
  }
  if (!tracker.stopped) {
    res.end(errorEvent('The upstream ended the stream before message_stop'));
    return { kind: 'cut', reason: 'upstream_incomplete', channelId, tracker };
  }
  res.end();
  return { kind: 'complete', reason: 'streamed', channelId, tracker };
}
