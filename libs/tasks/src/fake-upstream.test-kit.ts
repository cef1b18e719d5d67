import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';

/**
 * A small upstream speaking the gateway protocol (ack shape A, GET /v1/tasks/<id>) for the worker tests.
 * Prompt markers choose the outcome: [sim:fail] fails at poll, [sim:moderation] is refused at submit,
 * [sim:moderation-late] fails at poll with a moderation error, [sim:never] never finishes, [sim:hold-submit]
 * answers the submit only after `release()`, [sim:partial] completes with one image whatever `n` asked (otherwise `n`). `submitStatus` makes every submit answer that HTTP status.
 */
export interface FakeUpstream {
  baseUrl: string;
  apiKey: string;
  /** Submit calls per idempotency key (task id). */
  submits: Map<string, number>;
  /** Poll times per upstream task id. */
  polls: Map<string, number[]>;
  /** The upstream task id created for an idempotency key (our task id). */
  idOf(taskId: string): string;
  /** Requests with a wrong Authorization header. */
  unauthorized: number;
  /** Upstream task ids we were told to cancel (POST /v1/tasks/<id>/cancel). */
  cancels: string[];
  submitStatus?: number;
  /** Every authorised request: its method, path and the key it came with (the multi-key tests). */
  keysSeen: Array<{ method: string; path: string; key: string }>;
  /** The vendor revokes a key: every request with it answers 401 with `message`. */
  revoke(key: string, message?: string): void;
  /** The vendor rate-limits a key: its submits answer 429 with Retry-After 1. */
  rateLimit(key: string): void;
  /** Revoked and rate-limited keys work again. */
  heal(key: string): void;
  /** Lets held submits answer. */
  release(): void;
  /** Number of submits currently held. */
  held(): number;
  close(): Promise<void>;
}

interface FakeTask {
  id: string;
  prompt: string;
  polls: number;
  /** Images the request asked for (`n`, default 1). */
  n: number;
}

export async function startFakeUpstream(
  opts: { apiKey?: string; apiKeys?: string[]; pollsToComplete?: number; submitStatus?: number } = {},
): Promise<FakeUpstream> {
  const apiKey = opts.apiKey ?? opts.apiKeys?.[0] ?? `sk-up-${Math.random().toString(36).slice(2)}`;
  const accepted = new Set([apiKey, ...(opts.apiKeys ?? [])]);
  const revoked = new Map<string, string>();
  const limited = new Set<string>();
  const pollsToComplete = opts.pollsToComplete ?? 3;
  const byKey = new Map<string, FakeTask>();
  const byId = new Map<string, FakeTask>();
  let heldResolvers: Array<() => void> = [];
  let released = false;
  const app = express();
  app.use(express.json());
  const fake: FakeUpstream = {
    baseUrl: '',
    apiKey,
    submits: new Map(),
    polls: new Map(),
    unauthorized: 0,
    cancels: [],
    submitStatus: opts.submitStatus,
    keysSeen: [],
    revoke: (key, message = 'This API key has been revoked') => void revoked.set(key, message),
    rateLimit: (key) => void limited.add(key),
    heal: (key) => {
      revoked.delete(key);
      limited.delete(key);
    },
    release() {
      released = true;
      heldResolvers.forEach((r) => r());
      heldResolvers = [];
    },
    held: () => heldResolvers.length,
    idOf: (taskId) => byKey.get(taskId)?.id ?? '',
    close: async () => undefined,
  };
  app.use((req, res, next) => {
    const key = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (!accepted.has(key) || revoked.has(key)) {
      fake.unauthorized++;
      res.status(401).json({ error: { code: 401, message: revoked.get(key) ?? 'bad key', type: 'authentication_error' } });
      return;
    }
    if (limited.has(key) && req.method === 'POST') {
      res.setHeader('Retry-After', '1');
      res.status(429).json({ error: { code: 429, message: 'Rate limit reached for this key', type: 'rate_limit_error' } });
      return;
    }
    fake.keysSeen.push({ method: req.method, path: req.path, key });
    next();
  });
  app.post('/v1/tasks/:id/cancel', (req, res) => {
    fake.cancels.push(req.params.id);
    res.json({ code: 200, data: { id: req.params.id, status: 'failed' } });
  });
  app.post(/^\/v1\/.*/, async (req, res) => {
    const key = String(req.headers['idempotency-key'] ?? '');
    fake.submits.set(key, (fake.submits.get(key) ?? 0) + 1);
    const prompt = (req.body as { prompt?: string } | undefined)?.prompt ?? '';
    if (fake.submitStatus) {
      res.status(fake.submitStatus).json({ error: { code: fake.submitStatus, message: 'temporarily unavailable', type: 'service_unavailable' } });
      return;
    }
    if (prompt.includes('[sim:moderation]')) {
      res.status(400).json({ error: { code: 400, message: 'Banned prompt detected', type: 'content_policy_violation' } });
      return;
    }
    if (prompt.includes('[sim:hold-submit]') && !released) await new Promise<void>((r) => heldResolvers.push(r));
    let t = byKey.get(key);
    if (!t) {
      const n = Number((req.body as { n?: unknown })?.n ?? 1);
      t = { id: `up_${byId.size + 1}_${Math.random().toString(36).slice(2, 8)}`, prompt, polls: 0, n: Number.isInteger(n) && n > 0 ? n : 1 };
      byKey.set(key, t);
      byId.set(t.id, t);
    }
    res.json({ code: 200, data: [{ status: 'submitted', task_id: t.id }] });
  });
  app.get('/v1/tasks/:id', (req, res) => {
    const t = byId.get(req.params.id);
    if (!t) {
      res.status(404).json({ error: { code: 404, message: 'task not found', type: 'not_found_error' } });
      return;
    }
    t.polls++;
    fake.polls.set(t.id, [...(fake.polls.get(t.id) ?? []), Date.now()]);
    const base = { id: t.id, object: 'generation.task', model: 'lumen-2', created: 0, cost: 0 };
    if (t.polls >= pollsToComplete && !t.prompt.includes('[sim:never]')) {
      if (t.prompt.includes('[sim:fail]')) {
        res.json({
          code: 200,
          data: { ...base, status: 'failed', progress: 50, error: { code: 'task_failed', message: 'Generation failed: simulated', type: 'generation_error' } },
        });
        return;
      }
      if (t.prompt.includes('[sim:moderation-late]')) {
        res.json({ code: 200, data: { ...base, status: 'failed', progress: 10, error: { code: 'task_failed', message: 'Banned prompt detected' } } });
        return;
      }
      if (t.prompt.includes('[sim:empty]')) {
        res.json({ code: 200, data: { ...base, status: 'completed', progress: 100 } });
        return;
      }
      const count = t.prompt.includes('[sim:partial]') ? 1 : t.n;
      const images = Array.from({ length: count }, (_, i) => ({ url: `http://127.0.0.1/img/${t.id}-${i}.png`, width: 1024, height: 1024 }));
      res.json({ code: 200, data: { ...base, status: 'completed', progress: 100, result: { images } } });
      return;
    }
    res.json({ code: 200, data: { ...base, status: 'processing', progress: Math.min(99, Math.floor((100 * t.polls) / (pollsToComplete + 1))) } });
  });
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  fake.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      fake.release();
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return fake;
}
