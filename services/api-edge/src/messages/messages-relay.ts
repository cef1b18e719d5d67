import type { MessagesChannel } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import {
  channelUsable,
  pickChannel,
  pickKey,
  readCommonError,
  scrubSecret,
  statusActionOf,
  statusEffect,
  withFixedBody,
  type ChannelGate,
  type ChannelHealthReporter,
  type HealthEffect,
  type MessagesAnswer,
  type MessagesUpstreamClient,
} from '@gmg/upstream';
import type { OpenRow } from './credit-lease.book';
import type { MessagesSink, RelayedHeaders } from '../chat/messages-sink';
import type { CallTiming } from './server-timing';
import { SseEventTooLarge, SseFramer } from './sse-framer';
import { SseUsageTracker } from './sse-usage.tracker';

/** Per-call memory bounds (docs/messages.md, "Limits"). */
export interface RelayLimits {
  /** A non-streamed answer larger than this is not relayed (502): the gateway never holds more of one. */
  maxAnswerBytes: number;
  /** One SSE event larger than this ends the stream with an error event: the most held back per stream. */
  maxEventBytes: number;
}

/** What a channel of another protocol (`openai`: chat completions) is sent instead of the messages body, and where its answer goes. */
export interface UpstreamLeg {
  /** The request in the channel's protocol (its model name mapped). */
  body: Buffer;
  headers: Record<string, string>;
  /** Reads the answer in the channel's protocol and writes it in the client's. */
  sink: MessagesSink;
}

export interface RelayInput {
  /** Where a `messages` channel's answer goes (and whose client going away aborts the call). */
  sink: MessagesSink;
  channels: readonly MessagesChannel[];
  /** Per-channel health memory (CircuitBreaker): open circuits are skipped, outcomes are fed back. */
  gate: ChannelGate & { recordSuccess(id: string): void; recordFailure(id: string): void };
  /** Shared channel and key health (issue 37): a refused key is set aside, a failing channel cools for every replica. */
  health?: ChannelHealthReporter;
  version: string;
  /** The messages request as it goes upstream (the client's bytes, or a translation of another protocol). */
  body: Buffer;
  stream: boolean;
  /** Client headers passed upstream as they are (e.g. `anthropic-beta`). */
  headers: Record<string, string>;
  limits: RelayLimits;
  /** Follows the relayed usage; pass one to read it while the call runs. */
  tracker?: SseUsageTracker;
  /**
   * The call's open row (docs/messages.md, "Open"), issued before the upstream request and not awaited before the
   * first byte: a call whose row is already refused when its answer arrives (Postgres unreachable, lease swept)
   * answers 503 and relays nothing; a stream's writes after its first wait for the row (a kill -9 of the edge
   * charges a call what it journalled, and only a written row is journalled), and a stream whose row is refused
   * is cut with an error event. A whole answer does not wait: its record writes the row if it is missing.
   */
  row?: OpenRow;
  /** The call's times, sent as `Server-Timing` with the answer (server-timing.ts). */
  timing?: CallTiming;
  /** The call for an `openai` channel (built on first use); without it (or when it cannot carry the call) such channels are not tried. */
  openai?: (ch: MessagesChannel) => UpstreamLeg | undefined;
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
/** Refusals of the gateway's own channel (its key, its quota): never the caller's fault, never passed through. */
const OURS = (s: number) => s === 401 || s === 402 || s === 403;

/** Upstream response headers the client gets (framing and hop-by-hop headers are the gateway's own). */
const RELAYED = /^(content-type|request-id|retry-after|x-should-retry|(anthropic|msgproto)-[a-z0-9-]+)$/i;

function relayedHeaders(h: MessagesAnswer['headers'], serverTiming?: string): RelayedHeaders {
  const out: RelayedHeaders = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined && RELAYED.test(k)) out[k] = v;
  if (serverTiming) out['server-timing'] = serverTiming;
  return out;
}

class TooLarge extends Error {}

/** The vendor's own error message in a refusal's body (for the key's health record), if it has one. */
function vendorMessage(body: Buffer): string {
  try {
    return readCommonError(JSON.parse(body.toString('utf8'))).message ?? '';
  } catch {
    return '';
  }
}

/** The whole body, refusing (and freeing the connection) past `max` bytes. */
async function readAll(body: MessagesAnswer['body'], max: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const c of body as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > max) {
      body.destroy();
      throw new TooLarge(`the upstream's answer exceeds ${max} bytes`);
    }
    parts.push(c);
  }
  return Buffer.concat(parts, n);
}

/** What the caller sees when every channel refused with the gateway's own credentials or quota. */
function ourRefusal(status: number): DomainError {
  return status === 402
    ? new DomainError(
        'service_unavailable',
        'The upstream channels of this model are out of quota at the moment (upstream 402); this is not about your API key or balance',
      )
    : new DomainError('bad_gateway', `The upstream refused the gateway's channel credentials (upstream ${status}); this is not about your API key`);
}

/**
 * Sends the request to the channels, best first (open circuits skipped), and relays the answer. Any failure
 * before the first byte reaches the client moves on to the next channel; after it, never (the client has part of
 * one answer). A stream is committed only when its first whole event has arrived, so an upstream dying before it
 * fails over too. Only whole events are relayed (SseFramer): an upstream dying mid-event leaves the client with
 * the whole events, then one well-formed `event: error`. Writes wait for the client to drain.
 */
export async function relayMessages(client: MessagesUpstreamClient, logger: Logger, input: RelayInput): Promise<RelayOutcome> {
  const { sink, gate } = input;
  const tracker = input.tracker ?? new SseUsageTracker();
  const abort = new AbortController();
  const unsubscribe = sink.onClose(() => abort.abort());
  const gone = (channelId: string | null): RelayOutcome => ({ kind: 'failed', reason: 'client_closed', channelId, tracker });
  const tried = new Set<string>();
  // keys this call already used: a key refused or rate limited moves the call to another key of the same channel
  const usedKeys = new Set<string>();
  let last: { status: number; headers: MessagesAnswer['headers']; body: Buffer; channelId: string; sink: MessagesSink } | undefined;
  try {
    // channels set aside in the shared health (cooling, disabled, every key refused) wait for the probe
    const channels = input.channels.filter((c) => channelUsable(c));
    for (let ch = pickChannel(channels, gate); ch; ch = pickChannel(channels, gate, { exclude: tried })) {
      tried.add(ch.id);
      if (abort.signal.aborted) return gone(null);
      const key = pickKey(ch.keys, { exclude: usedKeys });
      if (key === undefined) continue;
      if (key) usedKeys.add(key.id);
      const target = { ...ch, ...(key ? { apiKey: key.secret, keyId: key.id } : {}) };
      // a channel of another protocol gets the call in its protocol (with the chosen key), and its answer is written
      // through its own sink
      const leg = ch.protocol === 'openai' ? input.openai?.(target) : undefined;
      if (ch.protocol === 'openai' && !leg) continue;
      const out = leg?.sink ?? sink;
      const failed = (what: string, err: unknown, effect: HealthEffect = 'failing') => {
        if (input.health) void input.health.failed(target, effect, (err as Error).message);
        else gate.recordFailure(ch!.id);
        const sameChannel = key && (effect === 'refused' || effect === 'rate_limited') && pickKey(ch!.keys, { exclude: usedKeys });
        if (sameChannel) tried.delete(ch!.id);
        logger.warn(
          { channel: ch!.name, key: key?.id, err: (err as Error).message },
          `messages upstream ${what}; trying ${sameChannel ? 'another key of the channel' : 'the next channel'}`,
        );
      };
      const succeeded = () => (input.health ? void input.health.succeeded(target, key) : gate.recordSuccess(ch!.id));
      let answer: MessagesAnswer;
      input.timing?.upstreamStarted();
      try {
        const body = leg?.body ?? input.body;
        answer = await client.send({
          target,
          version: input.version,
          // the channel's fixed body parameters under the request's own (channel-overrides.ts)
          body: ch.overrides?.body ? withFixedBody(body, ch.overrides.body) : body,
          headers: leg?.headers ?? input.headers,
          stream: input.stream,
          signal: abort.signal,
        });
      } catch (err) {
        if (abort.signal.aborted) return gone(ch.id);
        failed('unreachable or silent', err);
        continue;
      }
      const isStream = /^text\/event-stream/i.test(String(answer.headers['content-type'] ?? ''));
      if (answer.status !== 200 || !isStream) {
        let body: Buffer;
        try {
          body = await readAll(answer.body, input.limits.maxAnswerBytes);
        } catch (err) {
          if (abort.signal.aborted) return gone(ch.id);
          if (err instanceof TooLarge) {
            logger.warn({ channel: ch.name, limit: input.limits.maxAnswerBytes }, 'messages answer too large; not relayed');
            return {
              kind: 'failed',
              reason: 'answer_too_large',
              channelId: ch.id,
              tracker,
              error: new DomainError('bad_gateway', `The upstream's answer is larger than this gateway relays (${input.limits.maxAnswerBytes} bytes)`),
            };
          }
          failed('died before its answer', err);
          continue;
        }
        input.timing?.answered();
        // the channel's status_map over the built-in rule: `retry` and `failover` move on (a live call cannot wait),
        // `fail` passes the answer through without blaming the channel; a client error mapped to move on counts
        const action = ch.overrides?.status_map && answer.status >= 400 ? statusActionOf(ch.overrides.status_map, answer.status) : undefined;
        if (action ? action !== 'fail' : FAILS_OVER(answer.status)) {
          const message = scrubSecret(vendorMessage(body), target.apiKey);
          const effect = statusEffect(answer.status, message);
          failed('refused', new Error(`status ${answer.status}${message ? `: ${message}` : ''}`), action && effect === 'none' ? 'failing' : effect);
          last = { status: answer.status, headers: answer.headers, body, channelId: ch.id, sink: out };
          continue;
        }
        if (action !== 'fail') succeeded();
        if (answer.status < 300 && refused(input, logger)) return unrecorded(ch.id, tracker);
        out.whole(answer.status, relayedHeaders(answer.headers, input.timing?.wholeHeader()), body);
        if (answer.status >= 300) return { kind: 'failed', reason: `upstream_${answer.status}`, channelId: ch.id, tracker };
        try {
          tracker.readMessage(JSON.parse(body.toString('utf8')));
        } catch {
          // an unparsable success is charged by the fallback rule (no final usage)
        }
        return { kind: 'complete', reason: 'answered', channelId: ch.id, tracker };
      }
      const framer = new SseFramer(input.limits.maxEventBytes);
      const it = answer.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
      let first: Buffer | undefined;
      try {
        for (let r = await it.next(); !r.done; r = await it.next()) if ((first = framer.push(r.value))) break;
      } catch (err) {
        if (abort.signal.aborted) return gone(ch.id);
        answer.body.destroy();
        failed('stream died before its first event', err);
        continue;
      }
      if (!first) {
        failed('stream ended before its first event', new Error('empty stream'));
        continue;
      }
      succeeded();
      // reading goes on while the call is recorded and while the client drains: bytes left unread in the socket
      // are lost when the upstream resets it, and the events that arrived whole before a cut belong to the client
      const ahead = readAhead(it, framer, READ_AHEAD_BYTES);
      if (refused(input, logger)) {
        answer.body.destroy();
        return unrecorded(ch.id, tracker);
      }
      out.open(relayedHeaders(answer.headers, input.timing?.streamHeader()));
      return await pump(out, ahead, first, tracker, abort.signal, ch.id, answer, logger, input.row);
    }
  } finally {
    unsubscribe();
  }
  if (abort.signal.aborted) return gone(null);
  if (last && !OURS(last.status)) {
    // every channel refused: a refusal about the request or the load goes back as sent (clients retry 429/529)
    last.sink.whole(last.status, relayedHeaders(last.headers, input.timing?.wholeHeader()), last.body);
    return { kind: 'failed', reason: `upstream_${last.status}`, channelId: last.channelId, tracker };
  }
  const error = last
    ? ourRefusal(last.status)
    : tried.size === 0
      ? new DomainError(
          'service_unavailable',
          input.channels.length > 0 ? 'Every upstream channel of this model is failing at the moment; retry shortly' : 'No upstream channel serves this model',
          { retryAfter: 5 },
        )
      : new DomainError('bad_gateway', 'No upstream channel answered');
  return { kind: 'failed', reason: last ? `upstream_${last.status}` : 'no_channel_answered', channelId: last?.channelId ?? null, tracker, error };
}

/** True when the call's open row was already refused: then nothing may be sent (the call could not be charged). */
function refused(input: RelayInput, logger: Logger): boolean {
  const err = input.row?.failure;
  if (err === undefined) return false;
  logger.error({ err }, 'the chat call could not be recorded; answering 503 instead of relaying an uncharged answer');
  return true;
}

const unrecorded = (channelId: string, tracker: SseUsageTracker): RelayOutcome => ({
  kind: 'failed',
  reason: 'not_recorded',
  channelId,
  tracker,
  error: new DomainError('service_unavailable', 'The gateway cannot record calls at the moment; retry shortly', { retryAfter: 1 }),
});

/** The committed stream: headers and first events out, then every whole event as it comes, at the client's pace. */
async function pump(
  sink: MessagesSink,
  ahead: ReadAhead,
  first: Buffer,
  tracker: SseUsageTracker,
  signal: AbortSignal,
  channelId: string,
  answer: MessagesAnswer,
  logger: Logger,
  row: OpenRow | undefined,
): Promise<RelayOutcome> {
  let events: Buffer | undefined = first;
  // the first write goes at once; the next ones wait for the call's row (normally written long before)
  let unwritten = row?.durable;
  for (;;) {
    if (events) {
      tracker.push(events);
      const wait = sink.events(events);
      if (wait) await wait;
    }
    if (signal.aborted) return { kind: 'cut', reason: 'client_closed', channelId, tracker };
    if (unwritten) {
      try {
        await unwritten;
        unwritten = undefined;
      } catch (err) {
        answer.body.destroy();
        logger.error({ err, channelId }, 'the chat call could not be recorded; its stream ends after its first events');
        sink.end({ type: 'service_unavailable', message: 'The gateway cannot record calls at the moment; retry shortly' });
        return { kind: 'cut', reason: 'not_recorded', channelId, tracker };
      }
    }
    try {
      const next = await ahead.next();
      if (next === null) break;
      events = next;
    } catch (err) {
      if (signal.aborted) return { kind: 'cut', reason: 'client_closed', channelId, tracker };
      answer.body.destroy();
      if (err instanceof SseEventTooLarge) {
        logger.warn({ channelId, limit: err.maxEventBytes }, 'messages upstream event too large; stream ended');
        sink.end({ type: 'bad_gateway', message: `An upstream event is larger than this gateway relays (${err.maxEventBytes} bytes)` });
        return { kind: 'cut', reason: 'event_too_large', channelId, tracker };
      }
      logger.warn({ channelId, err: (err as Error).message }, 'messages upstream died mid-stream');
      sink.end({ type: 'bad_gateway', message: 'The upstream connection was lost mid-stream' });
      return { kind: 'cut', reason: 'upstream_lost', channelId, tracker };
    }
  }
  if (!tracker.stopped) {
    sink.end({ type: 'bad_gateway', message: 'The upstream ended the stream before message_stop' });
    return { kind: 'cut', reason: 'upstream_incomplete', channelId, tracker };
  }
  sink.end();
  return { kind: 'complete', reason: 'streamed', channelId, tracker };
}

/** Whole events read ahead of the client, at most `bound` bytes of them (then reading waits for the client). */
interface ReadAhead {
  /** The next whole events; null at the stream's end; throws the upstream's error once everything read before it is out. */
  next(): Promise<Buffer | null>;
}

/** What one stream may read ahead of a slow client: bounds memory per call (1,000 streams × 64 KiB). */
const READ_AHEAD_BYTES = 64 * 1024;

function readAhead(it: AsyncIterator<Buffer>, framer: SseFramer, bound: number): ReadAhead {
  const queue: Buffer[] = [];
  let bytes = 0;
  let ended: { err?: unknown } | undefined;
  let wake: (() => void) | undefined;
  let resume: (() => void) | undefined;
  const notify = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  void (async () => {
    try {
      for (;;) {
        const r = await it.next();
        if (r.done) {
          framer.end();
          break;
        }
        const events = framer.push(r.value);
        if (events) {
          queue.push(events);
          bytes += events.length;
          notify();
        }
        if (bytes > bound) await new Promise<void>((res) => (resume = res));
      }
      ended = {};
    } catch (err) {
      ended = { err };
    }
    notify();
  })();
  return {
    async next() {
      for (;;) {
        const events = queue.shift();
        if (events) {
          bytes -= events.length;
          if (bytes <= bound && resume) {
            const r = resume;
            resume = undefined;
            r();
          }
          return events;
        }
        if (ended) {
          if ('err' in ended) throw ended.err;
          return null;
        }
        await new Promise<void>((res) => (wake = res));
      }
    },
  };
}
