import { randomBytes, timingSafeEqual } from 'node:crypto';
import { EventEmitter } from 'node:events';
import express, { type Request, type Response, type Router } from 'express';
import { messagesBodyProblems } from '@gmg/contracts';
import type { Logger } from '@gmg/logger';
import { blockTokens, contentText, countInput, deltasOf, openingOf, replyTo, type Json, type SimReply } from './messages-sim.reply';

/**
 * The messages protocol as the vendor speaks it (POST /v1/messages), for tests, demos and the benchmark.
 * Markers in the last user message choose an outcome: `[sim:429]` rate limited, `[sim:529]` overloaded,
 * `[sim:drop]` the connection dies after a few stream events, `[sim:cut]` it dies in the middle of an event (half
 * of it sent), `[sim:slow]` a long stream with a pause per delta. Fault `hang`: calls are read and never answered.
 */
export interface MessagesSimOptions {
  /** When set, calls need it in `x-api-key` (or `Authorization: Bearer`). */
  apiKey?: string;
  log: Logger;
  /** Every call of this instance answers this fault (a sick channel in failover tests). */
  fault?: 'overloaded' | 'rate_limited' | 'hang';
  /** Pause between deltas of a `[sim:slow]` stream. */
  slowDeltaMs?: number;
  /** Emits 'request' ({id, stream}), 'refused' ({status}), 'finished' ({id}) and 'client_closed' ({id, eventsSent}). */
  events?: EventEmitter;
}

/** Deltas of a `[sim:slow]` stream: long enough that a test can abort it mid-way. */
const SLOW_REPEAT = 200;

const vendorError = (res: Response, status: number, type: string, message: string) => res.status(status).json({ type: 'error', error: { type, message } });

function keyGuard(apiKey: string, log: Logger) {
  const expected = Buffer.from(apiKey);
  return (req: Request, res: Response, next: () => void) => {
    const bearer = /^Bearer\s+(.+)$/i.exec(req.header('authorization') ?? '')?.[1];
    const given = Buffer.from((req.header('x-api-key') ?? bearer ?? '').trim());
    if (given.length === expected.length && timingSafeEqual(given, expected)) return next();
    log.info({ status: 401 }, 'messages call refused');
    vendorError(res, 401, 'authentication_error', 'invalid x-api-key');
  };
}

export function messagesSimRouter(opts: MessagesSimOptions): Router {
  const router = express.Router();
  if (opts.apiKey) router.use(keyGuard(opts.apiKey, opts.log));
  // the vendor's free token count: the same deterministic count the answers report as input_tokens
  router.post('/count_tokens', express.json({ limit: '30mb' }), (req, res) => {
    const b = req.body as Json;
    if (typeof b?.model !== 'string' || !Array.isArray(b.messages)) return vendorError(res, 400, 'invalid_request_error', 'model and messages are required');
    res.json({ input_tokens: countInput(b).tokens });
  });
  router.post('/', express.json({ limit: '30mb' }), (req, res) => {
    if (!req.header('anthropic-version') && !req.header('msgproto-version')) {
      return vendorError(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    }
    if (opts.fault === 'hang') {
      // a hung channel: the request is taken, no header ever comes (the gateway's header timeout must act)
      opts.log.info({}, 'messages call left hanging');
      opts.events?.emit('refused', { status: 0 });
      return;
    }
    // strict like the vendor: the structural rules it enforces (libs/contracts/src/messages-rules.ts cites its docs)
    const problems = messagesBodyProblems(req.body);
    if (problems.length > 0) return vendorError(res, 400, 'invalid_request_error', problems.join('; '));
    const body = req.body as Json;
    const msgs = body.messages as Json[];
    const said = contentText([...msgs].reverse().find((m) => m.role === 'user')?.content);
    if (opts.fault === 'rate_limited' || said.includes('[sim:429]')) {
      opts.log.info({ status: 429 }, 'messages call refused');
      opts.events?.emit('refused', { status: 429 });
      res.setHeader('retry-after', '1');
      return vendorError(res, 429, 'rate_limit_error', 'Number of requests has exceeded your rate limit');
    }
    if (opts.fault === 'overloaded' || said.includes('[sim:529]')) {
      opts.log.info({ status: 529 }, 'messages call refused');
      opts.events?.emit('refused', { status: 529 });
      return vendorError(res, 529, 'overloaded_error', 'Overloaded');
    }

    const { tokens, images } = countInput(body);
    const reply = replyTo(body, images, tokens);
    if (said.includes('[sim:slow]')) lengthen(reply);
    const id = `msg_${randomBytes(12).toString('hex')}`;
    res.setHeader('request-id', `req_sim_${randomBytes(8).toString('hex')}`);
    const markers = ['slow', 'drop', 'cut'].filter((m) => said.includes(`[sim:${m}]`));
    opts.log.info({ id, model: body.model, stream: body.stream === true, markers, usage: reply.usage }, 'messages call answered');
    opts.events?.emit('request', { id, stream: body.stream === true });
    if (body.stream !== true) {
      res.json(messageOf(id, body.model as string, reply, reply.blocks, reply.usage.output_tokens, reply.stopReason));
      opts.events?.emit('finished', { id });
      return;
    }
    void streamReply(
      res,
      { id, model: body.model as string, reply, drop: said.includes('[sim:drop]'), cut: said.includes('[sim:cut]'), slow: said.includes('[sim:slow]') },
      opts,
    );
  });
  return router;
}

/** A `[sim:slow]` answer: its text said SLOW_REPEAT times (usage counts all of it, max_tokens aside). */
function lengthen(r: SimReply): void {
  for (const b of r.blocks) if (b.type === 'text') b.text = Array.from({ length: SLOW_REPEAT }, () => b.text).join(' ');
  r.usage.output_tokens = r.blocks.reduce((n, b) => n + blockTokens(b), 0);
}

function messageOf(id: string, model: string, r: SimReply, content: unknown[], outputTokens: number, stop: string | null): Json {
  return { id, type: 'message', role: 'assistant', model, content, stop_reason: stop, stop_sequence: null, usage: { ...r.usage, output_tokens: outputTokens } };
}

interface StreamPlan {
  id: string;
  model: string;
  reply: SimReply;
  drop: boolean;
  cut: boolean;
  slow: boolean;
}

/** The vendor's event sequence; honours backpressure and stops at once when the client goes away. */
async function streamReply(res: Response, p: StreamPlan, opts: MessagesSimOptions): Promise<void> {
  let closed = false;
  let sent = 0;
  res.on('close', () => {
    if (res.writableFinished) return;
    closed = true;
    opts.log.info({ id: p.id, eventsSent: sent }, 'messages stream closed by the client before its end');
    opts.events?.emit('client_closed', { id: p.id, eventsSent: sent });
  });
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const send = async (type: string, data: Json): Promise<boolean> => {
    if (closed) return false;
    sent++;
    const frame = `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    if (p.cut && sent === 6) {
      // dies mid-event: half of this frame goes out, then the socket
      closed = true;
      res.write(frame.slice(0, Math.floor(frame.length / 2)), () => res.socket?.destroy());
      return false;
    }
    if (p.drop && sent === 6) {
      // a dying upstream: once this event is out, the socket goes away without message_stop
      closed = true;
      res.write(frame, () => res.socket?.destroy());
      return false;
    }
    if (!res.write(frame)) {
      await new Promise<void>((resolve) => {
        res.once('drain', resolve);
        res.once('close', resolve);
      });
    }
    if (p.slow) await new Promise((r) => setTimeout(r, opts.slowDeltaMs ?? 50));
    return !closed;
  };
  const r = p.reply;
  const start = messageOf(p.id, p.model, r, [], 1, null);
  if (!(await send('message_start', { message: start }))) return;
  if (!(await send('ping', {}))) return;
  for (const [index, block] of r.blocks.entries()) {
    if (!(await send('content_block_start', { index, content_block: openingOf(block) }))) return;
    for (const delta of deltasOf(block)) if (!(await send('content_block_delta', { index, delta }))) return;
    if (!(await send('content_block_stop', { index }))) return;
  }
  if (!(await send('message_delta', { delta: { stop_reason: r.stopReason, stop_sequence: null }, usage: { output_tokens: r.usage.output_tokens } }))) return;
  if (!(await send('message_stop', {}))) return;
  res.end();
  opts.events?.emit('finished', { id: p.id });
}
