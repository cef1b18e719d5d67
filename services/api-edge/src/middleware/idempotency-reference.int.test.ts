import { createHash } from 'node:crypto';
import { startTracing } from '@gmg/observability';
import { idempotencyKey } from '@gmg/queue';
import { freePort } from '@gmg/testing';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/**
 * Answers of the task-creating routes are stored as a reference to their task (`T:…`) and rebuilt from Postgres
 * on replay: through the real edge, real Redis and real Postgres, the replay must be the first answer's bytes.
 */
let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness();
});
afterAll(async () => {
  await h?.close();
});

/**
 * What a submit answer may cost in Redis as a reference (MEMORY USAGE, key name included): 312 bytes measured
 * 2026-11-26 with this harness's 133-character key name, of which 216 are that key with a 1-byte value; the whole
 * answer cost 520. (With production's 112-character names: 280 against 488.) The key name alone is past 120 bytes.
 */
const REFERENCE_BOUND_BYTES = 320;

interface Raw {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Headers of each request, not of the answer: never replayed (X-Request-Id, Date, rate limits, the replay mark). */
const perRequest = (name: string) =>
  ['x-request-id', 'date', 'connection', 'keep-alive', 'idempotent-replayed'].includes(name) || name.startsWith('x-ratelimit-') || name === 'retry-after';
const answerHeaders = (r: Raw) => Object.fromEntries(Object.entries(r.headers).filter(([n]) => !perRequest(n)));

/** A submission with the body bytes as they came off the wire (no parsing: a changed byte must show). */
async function post(key: string, path: string, body: unknown, idem: string, headers: Record<string, string> = {}): Promise<Raw> {
  const r = await fetch(`${h.baseUrl}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Idempotency-Key': idem, ...headers },
    body: JSON.stringify(body),
  });
  return { status: r.status, headers: Object.fromEntries(r.headers), body: Buffer.from(await r.arrayBuffer()) };
}

const redisKeyOf = (keyId: string, idem: string) => idempotencyKey(h.prefix, keyId, createHash('sha256').update(idem).digest('hex'));
const stored = async (keyId: string, idem: string) => (await h.redis.get(redisKeyOf(keyId, idem))) ?? '';
const counts = async (accountId: string) =>
  (
    await h.db.dataSource.query(
      `SELECT (SELECT count(*)::int FROM tasks WHERE account_id = $1) AS tasks,
          (SELECT count(*)::int FROM ledger_entries WHERE account_id = $1 AND kind = 'hold') AS holds`,
      [accountId],
    )
  )[0] as { tasks: number; holds: number };

/** First answer, then its replay: same status, same answer headers, same body bytes, and the handler ran once. */
async function expectByteIdenticalReplay(
  c: { key: string; keyId: string; accountId: string },
  path: string,
  body: unknown,
  idem: string,
  headers: Record<string, string> = {},
): Promise<{ first: Raw; value: string }> {
  const first = await post(c.key, path, body, idem, headers);
  expect(first.status).toBeLessThan(300);
  const value = await stored(c.keyId, idem);
  expect(value.slice(0, 2)).toBe('T:');
  const before = await counts(c.accountId);
  const replay = await post(c.key, path, body, idem, headers);
  expect(replay.headers['idempotent-replayed']).toBe('true');
  expect(replay.status).toBe(first.status);
  expect(answerHeaders(replay)).toEqual(answerHeaders(first));
  // the raw bytes, not parsed JSON: a rebuild that reorders a key or changes a space fails here
  expect(replay.body.equals(first.body)).toBe(true);
  expect(await counts(c.accountId)).toEqual(before);
  return { first, value };
}

describe('idempotent answers stored as a reference to their task', () => {
  it('image shape A: stored as T:<fp>:200:A:<task id>, replayed byte for byte; bytes measured against the whole answer', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const { first, value } = await expectByteIdenticalReplay(c, '/v1/images/generations', { model: 'lumen-2-flex', prompt: 'a lighthouse' }, 'img-a');
    const taskId = JSON.parse(first.body.toString()).data[0].task_id as string;
    expect(value).toMatch(new RegExp(`^T:[0-9a-f]{64}:200:A:${taskId}$`));

    // the same answer stored whole (what was stored before), under a key name of the same length: the difference is the value
    const key = redisKeyOf(c.keyId, 'img-a');
    const whole = `D:${JSON.stringify({ fp: value.split(':')[1], status: 200, headers: { 'content-type': first.headers['content-type'] }, body: first.body.toString('base64') })}`;
    const twin = `${key.slice(0, -2)}x}`;
    await h.redis.set(twin, whole, 'EX', 60);
    const usage = async (k: string) => Number(await h.redis.memory('USAGE', k, 'SAMPLES', 0));
    const [reference, full] = [await usage(key), await usage(twin)];
    await h.redis.set(twin, 'x', 'EX', 60);
    const keyOnly = await usage(twin);
    await h.redis.del(twin);
    process.stdout.write(
      `idempotency answer of a submit (MEMORY USAGE, key of ${key.length} chars): reference ${reference} B (value ${value.length} chars), ` +
        `whole answer ${full} B (value ${whole.length} chars), the key alone with a 1-byte value ${keyOnly} B\n`,
    );
    expect(reference).toBeLessThanOrEqual(REFERENCE_BOUND_BYTES);
    expect(reference).toBeLessThan(full);
  });

  it('video shape A and image shape B (with the response version sent, and without) are replayed byte for byte', async () => {
    const c = await h.newCustomer({ balance: 100 });
    await expectByteIdenticalReplay(c, '/v1/videos/generations', { model: 'pixel-v6', prompt: 'waves at dusk' }, 'vid-a');
    const spark = { model: 'spark-imagine-image-2.0', prompt: 'a paper boat' };
    const b = await expectByteIdenticalReplay(c, '/v1/images/generations', spark, 'img-b');
    expect(b.first.status).toBe(202);
    expect(b.value).toMatch(/^T:[0-9a-f]{64}:202:B@2026-07-27:task_/);
    // the request id in the body is the first request's, read back from the task
    expect(JSON.parse(b.first.body.toString()).request_id).toBe(b.first.headers['x-request-id']);
    await expectByteIdenticalReplay(c, '/v1/images/generations', spark, 'img-b-v', { 'X-Service-Response-Version': '2026-08-01' });
  });

  it('avatar shape C and the art suite acknowledgement are replayed byte for byte', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const avatar = await expectByteIdenticalReplay(
      c,
      '/v1/motion2/private-avatar',
      { asset_type: 'Image', project_name: 'p', assets: [{ url: 'https://cdn.example.com/a/0.png', name: 'a0' }] },
      'avatar',
    );
    expect(avatar.value).toMatch(/:200:C:task_/);
    const art = await expectByteIdenticalReplay(c, '/v1/artgen/generations/imagine', { prompt: 'a fox --v 7' }, 'art');
    expect(art.value).toMatch(/:200:G:task_/);
    await expectByteIdenticalReplay(c, '/v1/artgen/generations', { prompt: 'a fox --v 8.2' }, 'art-base');
  });

  it('a reference under the same key with another request is 422, as a whole answer is', async () => {
    const c = await h.newCustomer({ balance: 10 });
    await post(c.key, '/v1/images/generations', { model: 'lumen-2-flex', prompt: 'first' }, 'mis');
    const other = await post(c.key, '/v1/images/generations', { model: 'lumen-2-flex', prompt: 'second' }, 'mis');
    expect(other.status).toBe(422);
    expect(JSON.parse(other.body.toString()).error).toMatchObject({ code: 422, type: 'invalid_request_error' });
    expect(await counts(c.accountId)).toEqual({ tasks: 1, holds: 1 });
  });

  it('a reference whose task was archived answers 422 naming the task, and creates and holds nothing again', async () => {
    const c = await h.newCustomer({ balance: 10 });
    const body = { model: 'lumen-2-flex', prompt: 'kept a short while' };
    const first = await post(c.key, '/v1/images/generations', body, 'gone');
    const taskId = JSON.parse(first.body.toString()).data[0].task_id as string;
    // what the retention sweep does to an old task (RetentionRepository.archiveTasks)
    await h.db.dataSource.query(
      `WITH moved AS (DELETE FROM tasks WHERE id = $1 RETURNING *)
       INSERT INTO tasks_archive (id, account_id, created_at, completed_at, task)
       SELECT id, account_id, created_at, now(), to_jsonb(moved) FROM moved`,
      [taskId],
    );
    const replay = await post(c.key, '/v1/images/generations', body, 'gone');
    expect(replay.status).toBe(422);
    expect(JSON.parse(replay.body.toString())).toEqual({
      error: { code: 422, type: 'invalid_request_error', message: expect.stringContaining(`task ${taskId}, which is no longer kept`) },
    });
    expect(replay.headers['idempotent-replayed']).toBeUndefined();
    expect(await counts(c.accountId)).toEqual({ tasks: 0, holds: 1 });
    expect((await stored(c.keyId, 'gone')).slice(0, 2)).toBe('T:'); // nothing rewritten: the key stays spent
  });

  it("keeps the whole answer when the task cannot rebuild it: shape B answered by the backstop quotes the retry's request id", async () => {
    const c = await h.newCustomer({ balance: 10 });
    const spark = { model: 'spark-imagine-image-2.0', prompt: 'lost record' };
    const first = await post(c.key, '/v1/images/generations', spark, 'lost');
    await h.redis.del(redisKeyOf(c.keyId, 'lost'));
    const retry = await post(c.key, '/v1/images/generations', spark, 'lost');
    const [a, b] = [JSON.parse(first.body.toString()), JSON.parse(retry.body.toString())];
    expect(b.data.id).toBe(a.data.id);
    expect(b.request_id).not.toBe(a.request_id);
    expect((await stored(c.keyId, 'lost')).slice(0, 2)).toBe('D:');
    const replay = await post(c.key, '/v1/images/generations', spark, 'lost');
    expect([replay.status, replay.headers['idempotent-replayed'], replay.body.equals(retry.body)]).toEqual([202, 'true', true]);
  });
});

describe('with tracing on (X-Trace-Id is part of the answer, kept on the task)', () => {
  let tracing: ReturnType<typeof startTracing>;
  beforeAll(async () => {
    // nothing listens there: spans are dropped, the X-Trace-Id header is what matters
    tracing = startTracing({ service: 'idempotency-test', endpoint: `http://127.0.0.1:${await freePort()}`, flushIntervalMs: 60_000 });
  });
  afterAll(async () => {
    await tracing.shutdown().catch(() => undefined);
  });

  it("replays the first answer's X-Trace-Id and bytes, rebuilt from the task", async () => {
    const c = await h.newCustomer({ balance: 10 });
    const { first } = await expectByteIdenticalReplay(c, '/v1/images/generations', { model: 'lumen-2-flex', prompt: 'traced' }, 'traced');
    expect(first.headers['x-trace-id']).toMatch(/^[0-9a-f]{32}$/);
  });
});
