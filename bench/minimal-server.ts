/**
 * The ceiling of `npm run bench -- ceiling`: a minimal server doing the essential work of a submit and a poll with
 * the same stack as the gateway, and nothing else (no auth, no quote, no ledger, no logging, no metrics).
 *   POST /v1/images/generations  Express 5 JSON body → Joi → one pg INSERT → one BullMQ add → 200 {task_id}
 *   GET  /v1/tasks/:id            one Redis HGETALL → 200 JSON (404 when absent)
 * The submit also writes the hash the poll reads (one HSET), as the gateway's task view does.
 * Env: PORT, DATABASE_URL, REDIS_URL, QUEUE_PREFIX; MINIMAL_PROTOTYPED=1: requests and responses made with the app's
 * prototypes from the start, as the gateway's server does (services/api-edge/src/http/app-server.ts; written again
 * here on purpose: the ceiling never runs gateway code) — the stricter ceiling, `BENCH_MINIMAL_PROTOTYPED=1`.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Queue } from 'bullmq';
import express from 'express';
import { Redis } from 'ioredis';
import Joi from 'joi';
import { Pool } from 'pg';

const schema = Joi.object<{ model: string; prompt: string; resolution: string }>({
  model: Joi.string().valid('lumen-2-flex').required(),
  prompt: Joi.string().min(1).max(4000).required(),
  resolution: Joi.string().valid('1MP', '2MP', '4MP').default('1MP'),
});

async function main(): Promise<void> {
  const prefix = process.env.QUEUE_PREFIX ?? 'bench-minimal';
  const pg = new Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  await pg.query('CREATE TABLE IF NOT EXISTS bench_minimal_tasks (id text PRIMARY KEY, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())');
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
  const queue = new Queue('bench-minimal', { connection: redis, prefix });
  const app = express();
  app.use(express.json());
  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  app.post('/v1/images/generations', async (req, res) => {
    const result = schema.validate(req.body);
    if (result.error) {
      res.status(400).json({ error: { message: result.error.message } });
      return;
    }
    const value = result.value;
    const id = `task_${randomUUID().replace(/-/g, '')}`;
    await pg.query('INSERT INTO bench_minimal_tasks (id, body) VALUES ($1, $2)', [id, value]);
    await redis.hset(`${prefix}:view:${id}`, { status: 'queued', model: value.model });
    await queue.add('generate', { id }, { jobId: id, removeOnComplete: true });
    res.json({ data: [{ task_id: id }] });
  });
  app.get('/v1/tasks/:id', async (req, res) => {
    const view = await redis.hgetall(`${prefix}:view:${req.params.id}`);
    if (!view.status) {
      res.status(404).json({ error: { message: 'not found' } });
      return;
    }
    res.json({ task_id: req.params.id, ...view });
  });
  let server: http.Server;
  if (process.env.MINIMAL_PROTOTYPED === '1') {
    const Req = function (this: http.IncomingMessage, socket: never) {
      http.IncomingMessage.call(this, socket);
    };
    Req.prototype = app.request;
    const Res = function (this: http.ServerResponse, req: never, options: never) {
      (http.ServerResponse as unknown as (this: unknown, a: never, b: never) => void).call(this, req, options);
    };
    Res.prototype = app.response;
    server = http.createServer({ IncomingMessage: Req as never, ServerResponse: Res as never }, app).listen(Number(process.env.PORT), '127.0.0.1');
  } else {
    server = app.listen(Number(process.env.PORT), '127.0.0.1');
  }
  const stop = () => {
    server.close();
    void Promise.allSettled([queue.close(), pg.end()])
      .then(() => redis.quit())
      .finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
