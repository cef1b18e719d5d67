import type { Response } from 'express';
import type { MessagesChannel } from '@gmg/db';
import { isObject, type Json } from '../chat-completions/chat-messages';
import { DEFAULT_MAX_TOKENS } from '../chat-completions/chat-request';
import { chatError } from '../chat-completions/chat-response';
import { keptHeaders, sseHeaders, translatingSink } from '../chat-completions/chat-sink';
import type { UpstreamLeg } from '../messages/messages-relay';
import { drained, errorEvent, sinkOn, type MessagesSink } from '../chat/messages-sink';
import { messageOfCompletion, messagesErrorOf } from './chat-to-messages';
import { MessagesFromChatStream } from './chat-to-messages.stream';
import { chatBodyOfMessages } from './messages-to-chat';

/**
 * One leg per vendor model name (channels mapping a model alike share the body), built on first use. `model`: the
 * catalog id (a channel's `model_map` maps it; unmapped, the vendor gets it as it is).
 */
function perModel(build: (vendor: string) => UpstreamLeg | undefined, model: string): (ch: MessagesChannel) => UpstreamLeg | undefined {
  const legs = new Map<string, UpstreamLeg | undefined>();
  return (ch) => {
    const name = ch.modelMap[model] ?? model;
    if (!legs.has(name)) legs.set(name, build(name));
    return legs.get(name);
  };
}

/** The usage chunk (empty `choices`, compact JSON or with a space) a client that did not ask for it does not get. */
const USAGE_CHUNK = ['"choices":[]', '"choices": []'];
const hasUsageChunk = (b: Buffer): boolean => b.includes(USAGE_CHUNK[0]) || b.includes(USAGE_CHUNK[1]);

/**
 * The chat-completions answer of an `openai` channel, as it is, to a chat-completions client: whole answers and
 * errors (already in this protocol's envelope) pass through; a stream passes event by event, without the usage
 * chunk the gateway asked for when the client did not.
 */
function chatPassSink(res: Response, includeUsage: boolean): MessagesSink {
  return sinkOn(res, {
    whole(status, headers, body) {
      res
        .status(status)
        .set({ ...keptHeaders(headers), 'content-type': 'application/json' })
        .end(body);
    },
    open(headers) {
      res.writeHead(200, sseHeaders(headers));
    },
    events(chunk) {
      // the usage chunk only exists when the gateway added include_usage; searched only then
      const out = includeUsage || !hasUsageChunk(chunk) ? chunk : withoutUsageChunk(chunk);
      if (out.length === 0) return undefined;
      return res.write(out) ? undefined : drained(res);
    },
    end(error) {
      if (error) res.end(`data: ${JSON.stringify(chatError(error.type, error.message))}\n\n`);
      else res.end();
    },
  });
}

/** The events of a batch less the usage chunk (no choices, a usage object); other choice-less chunks (Azure's prompt filter results) stay. */
export function withoutUsageChunk(chunk: Buffer): Buffer {
  const kept = chunk
    .toString('utf8')
    .split(/(?<=\r?\n\r?\n)/)
    .filter((e) => !(/"choices":\s*\[\s*\]/.test(e) && /"usage":\s*\{/.test(e)));
  return Buffer.from(kept.join(''));
}

/**
 * `/v1/chat/completions` to an `openai` channel: the client's body unchanged (its own bytes when nothing changes)
 * apart from what the gateway owns: the model name (`model_map`), the usage of a stream
 * (`stream_options.include_usage`, for billing), and a `max_completion_tokens` of DEFAULT_MAX_TOKENS when the
 * client set no bound (the hold is for that many).
 */
export function chatPassLeg(res: Response, raw: Buffer, parsed: Json, model: string, includeUsage: boolean): (ch: MessagesChannel) => UpstreamLeg | undefined {
  let sink: MessagesSink | undefined;
  const stream = parsed.stream === true;
  const unbounded =
    (parsed.max_tokens === undefined || parsed.max_tokens === null) && (parsed.max_completion_tokens === undefined || parsed.max_completion_tokens === null);
  return perModel((name) => {
    sink ??= chatPassSink(res, includeUsage);
    if (name === parsed.model && (!stream || includeUsage) && !unbounded) return { body: raw, headers: {}, sink };
    const b: Json = { ...parsed, model: name };
    if (stream) b.stream_options = { ...(isObject(parsed.stream_options) ? parsed.stream_options : {}), include_usage: true };
    if (unbounded) b.max_completion_tokens = DEFAULT_MAX_TOKENS;
    return { body: Buffer.from(JSON.stringify(b)), headers: {}, sink };
  }, model);
}

/** The messages answer of an `openai` channel's chat completion: translated whole, or one chunk at a time. */
function messagesFromChatSink(res: Response, model: string): MessagesSink {
  const stream = new MessagesFromChatStream(model);
  return translatingSink(res, {
    error: (status, body) => messagesErrorOf(status, body),
    answer: (c) => messageOfCompletion(c, model),
    unreadable: { type: 'error', error: { type: 'bad_gateway', message: 'The upstream answer could not be read' } },
    push: (events) => stream.push(events),
    fail: (type, message) => errorEvent({ type, message }),
  });
}

/**
 * `/v1/messages` to an `openai` channel: the body translated to chat completions (messages-to-chat.ts); a body chat
 * cannot carry skips the channel. `model`: the catalog id; `asked`: the name the client used (the answer echoes it).
 */
export function messagesToChatLeg(res: Response, raw: Buffer, model: string, asked: string): (ch: MessagesChannel) => UpstreamLeg | undefined {
  let sink: MessagesSink | undefined;
  let parsed: Json | undefined;
  return perModel((name) => {
    parsed ??= JSON.parse(raw.toString('utf8')) as Json;
    const t = chatBodyOfMessages(parsed, name);
    if ('problem' in t) return undefined;
    sink ??= messagesFromChatSink(res, asked);
    return { body: Buffer.from(JSON.stringify(t.body)), headers: {}, sink };
  }, model);
}
