import request from 'supertest';
import type express from 'express';
import type { NormalizedRequest } from '@gmg/contracts';
import { ApiKeyRepository, ChatCallRepository, TaskRepository, newTaskId, settleTask } from '@gmg/db';
import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { managementApp } from './management.test-kit';

const ADMIN = 'admin-token-for-console-tests';

/** The console's reads (docs/management-api.md, "Console routes") on a real database, through the router. */
describe('console routes /api/accounts, /api/tasks (real Postgres)', () => {
  let db: TestDatabase;
  let app: express.Express;
  const admin = (path: string) => request(app).get(path).set('Authorization', `Bearer ${ADMIN}`);
  const post = (path: string, body: object) => request(app).post(path).set('Authorization', `Bearer ${ADMIN}`).send(body);

  beforeAll(async () => {
    db = await createTestDatabase();
    app = managementApp(db.dataSource, ADMIN);
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** Every page of a list, following next_cursor (at most `max` pages). */
  async function walk(path: string, query: Record<string, string | number>, max = 50): Promise<{ items: Array<Record<string, unknown>>; pages: number }> {
    const items: Array<Record<string, unknown>> = [];
    let cursor: string | null = null;
    for (let pages = 1; pages <= max; pages++) {
      const r: request.Response = await admin(path).query({ ...query, ...(cursor ? { cursor } : {}) });
      expect([r.status, r.body.success]).toEqual([200, true]);
      items.push(...r.body.data.items);
      cursor = r.body.data.next_cursor;
      if (!cursor) return { items, pages };
    }
    throw new Error(`more than ${max} pages`);
  }

  async function customer(name: string) {
    const acc = (await post('/api/accounts', { name, balance: 100 })).body.data as { id: string };
    const secret = (await post('/api/keys', { account_id: acc.id })).body.data.key as string;
    const keyId = (await new ApiKeyRepository(db.dataSource).authenticate(secret))!.keyId;
    return { accountId: acc.id, keyId, secret };
  }

  const tasks = () => new TaskRepository(db.dataSource);
  const submit = (c: { accountId: string; keyId: string }, model: string, pool: 'image' | 'video' = 'image', price = 100_000n) =>
    tasks().createWithHold({
      id: newTaskId(),
      accountId: c.accountId,
      apiKeyId: c.keyId,
      model,
      requestedModel: model,
      pool,
      request: { model, upstreamBody: { prompt: 'p'.repeat(3000) } } as unknown as NormalizedRequest,
      price,
      priceSnapshot: {},
      deadlineAt: new Date(Date.now() + 60_000),
    });

  it('searches accounts by a part of the name (any case) or an exact id, newest first, in keyset pages', async () => {
    const made: string[] = [];
    for (const n of ['Zebra Labs', 'zebra-two', 'ZEBRA three', 'other']) made.push((await post('/api/accounts', { name: n })).body.data.id);
    const zebra = await walk('/api/accounts', { q: 'zEbRa', limit: 2 });
    expect(zebra.items.map((a) => a.name)).toEqual(['ZEBRA three', 'zebra-two', 'Zebra Labs']);
    expect(zebra.pages).toBe(2);
    expect(zebra.items[0]).toMatchObject({ id: made[2], group: 'default', balance: 0, available: 0, held: 0, spent: 0 });
    const byId = await admin('/api/accounts').query({ q: made[3]!.toUpperCase() });
    expect(byId.body.data).toEqual({ items: [expect.objectContaining({ id: made[3], name: 'other' })], next_cursor: null });
    const all = await walk('/api/accounts', { limit: 3 });
    expect(all.items.map((a) => a.id)).toEqual(expect.arrayContaining(made));
    expect(new Set(all.items.map((a) => a.id)).size).toBe(all.items.length);
  });

  it('answers a bad account query with 400 naming the field', async () => {
    for (const [query, field] of [
      [{ limit: 0 }, 'limit'],
      [{ limit: 101 }, 'limit'],
      [{ cursor: 'garbage' }, 'cursor'],
      [{ cursor: Buffer.from(JSON.stringify(['2026-01-01 00:00:00+00', 'task_x'])).toString('base64url') }, 'cursor'],
      [{ q: '' }, 'q'],
      [{ sort: 'name' }, 'sort'],
    ] as const) {
      const r = await admin('/api/accounts').query(query);
      expect([r.status, r.body.success, r.body.data]).toEqual([400, false, null]);
      expect(r.body.message).toContain(`'${field}'`);
    }
    expect((await request(app).get('/api/accounts')).status).toBe(401);
  });

  it('lists tasks newest first under every filter, pages by keyset, and keeps pages consistent while tasks arrive', async () => {
    const a = await customer('list-a');
    const b = await customer('list-b');
    const t1 = await submit(a, 'lumen-2-flex');
    const t2 = await submit(a, 'lumen-2-pro', 'image', 500_000n);
    const t3 = await submit(b, 'vidu-q1', 'video');
    const t4 = await submit(a, 'lumen-2-flex');
    await tasks().markSubmitted(t2.id, '00000000-0000-4000-8000-0000000000c1', 'up-2');
    await tasks().complete(t1.id, { images: [{ url: 'http://127.0.0.1/1.png' }] });
    await tasks().fail(t2.id, { code: 'task_failed', message: 'upstream refused the prompt' });
    await settleTask(db.dataSource, t1.id);
    await settleTask(db.dataSource, t2.id);

    const ids = async (query: Record<string, string | number>) => (await walk('/api/tasks', { ...query, limit: 1 })).items.map((t) => t.task_id);
    expect(await ids({ account_id: a.accountId })).toEqual([t4.id, t2.id, t1.id]);
    expect(await ids({ key_id: b.keyId })).toEqual([t3.id]);
    expect(await ids({ account_id: a.accountId, model: 'lumen-2-flex' })).toEqual([t4.id, t1.id]);
    expect(await ids({ status: 'failed', account_id: a.accountId })).toEqual([t2.id]);
    expect(await ids({ pool: 'video', key_id: b.keyId })).toEqual([t3.id]);
    expect(await ids({ channel_id: '00000000-0000-4000-8000-0000000000c1' })).toEqual([t2.id]);
    const future = Math.floor(Date.now() / 1000) + 3600;
    expect(await ids({ account_id: a.accountId, from: future })).toEqual([]);
    expect(await ids({ account_id: a.accountId, from: 0, to: future })).toEqual([t4.id, t2.id, t1.id]);

    const failed = (await admin('/api/tasks').query({ status: 'failed', account_id: a.accountId })).body.data.items[0];
    expect(failed).toEqual({
      task_id: t2.id,
      account_id: a.accountId,
      key_id: a.keyId,
      model: 'lumen-2-pro',
      requested_model: 'lumen-2-pro',
      pool: 'image',
      status: 'failed',
      channel_id: '00000000-0000-4000-8000-0000000000c1',
      price: 0.5,
      cost: 0,
      settled: true,
      created_at: expect.any(Number),
      completed_at: expect.any(Number),
      error: { code: 'task_failed', message: 'upstream refused the prompt' },
      trace_id: null,
      request_id: null,
    });
    const done = (await admin('/api/tasks').query({ account_id: a.accountId, model: 'lumen-2-flex', limit: 2 })).body.data.items[1];
    expect(done).toMatchObject({ task_id: t1.id, status: 'completed', cost: 0.1, settled: true, error: null });

    // a page, then new tasks, then the next page: nothing repeated, nothing skipped
    const first = await admin('/api/tasks').query({ account_id: a.accountId, limit: 2 });
    expect(first.body.data.items.map((t: { task_id: string }) => t.task_id)).toEqual([t4.id, t2.id]);
    const t5 = await submit(a, 'lumen-2-flex');
    const second = await admin('/api/tasks').query({ account_id: a.accountId, limit: 2, cursor: first.body.data.next_cursor });
    expect(second.body.data).toEqual({ items: [expect.objectContaining({ task_id: t1.id })], next_cursor: null });
    expect(await ids({ account_id: a.accountId })).toEqual([t5.id, t4.id, t2.id, t1.id]);
  });

  it('ends a page short when its walk read the scan budget, and the cursor resumes there: every match once, in order', async () => {
    const small = managementApp(db.dataSource, ADMIN, { listScanBudget: 4 });
    const c = await customer('sparse');
    const made: Array<{ id: string; failed: boolean }> = [];
    for (let i = 0; i < 17; i++) {
      const t = await submit(c, 'lumen-2-flex');
      const failed = i % 5 === 0;
      if (failed) await tasks().fail(t.id, { code: 'task_failed', message: `f${i}` });
      made.push({ id: t.id, failed });
    }
    const expected = made
      .filter((t) => t.failed)
      .map((t) => t.id)
      .reverse();
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 20; page++) {
      const r: request.Response = await request(small)
        .get('/api/tasks')
        .query({ account_id: c.accountId, status: 'failed', limit: 2, ...(cursor ? { cursor } : {}) })
        .set('Authorization', `Bearer ${ADMIN}`);
      expect(r.status).toBe(200);
      seen.push(...r.body.data.items.map((t: { task_id: string }) => t.task_id));
      sizes.push(r.body.data.items.length);
      cursor = r.body.data.next_cursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(expected);
    // 17 rows read 4 at a time: 5 walks, some of them with no match at all but a cursor
    expect(sizes).toHaveLength(5);
    expect(sizes).toContain(0);
    // the account search walks the same way: the one match is found behind newer accounts, once
    for (let i = 0; i < 9; i++) await post('/api/accounts', { name: `newer-${i}` });
    const found: string[] = [];
    cursor = null;
    for (let page = 0; page < 20; page++) {
      const r: request.Response = await request(small)
        .get('/api/accounts')
        .query({ q: 'SPARSE', limit: 1, ...(cursor ? { cursor } : {}) })
        .set('Authorization', `Bearer ${ADMIN}`);
      found.push(...r.body.data.items.map((a: { id: string }) => a.id));
      cursor = r.body.data.next_cursor;
      if (!cursor) break;
    }
    expect(found).toEqual([c.accountId]);
  });

  it("lists chat calls (task rows of pool 'chat') with the cost of their usage, filterable by pool", async () => {
    const c = await customer('chat');
    const calls = new ChatCallRepository(db.dataSource);
    const id = newTaskId();
    const chat = { accountId: c.accountId, apiKeyId: c.keyId, model: 'claude-x', requestedModel: 'claude-x', priceSnapshot: {} };
    await calls.open({ ...chat, id, request: { model: 'claude-x', max_tokens: 100 }, hold: 900_000n, deadlineAt: new Date(Date.now() + 60_000) });
    await calls.settle(id, { status: 'completed', cost: 120_000n, result: { cost: '120000', usage: { input_tokens: 10 } }, error: null, channelId: null });
    const media = await submit(c, 'lumen-2-flex');
    const all = (await admin('/api/tasks').query({ account_id: c.accountId })).body.data.items;
    expect(all.map((t: { task_id: string }) => t.task_id)).toEqual([media.id, id]);
    expect(all[1]).toMatchObject({ pool: 'chat', status: 'completed', price: 0.9, cost: 0.12, settled: true });
    const chats = (await admin('/api/tasks').query({ account_id: c.accountId, pool: 'chat' })).body.data.items;
    expect(chats.map((t: { task_id: string }) => t.task_id)).toEqual([id]);
    const detail = (await admin(`/api/tasks/${id}`)).body.data;
    expect(detail.entries.map((e: { kind: string; amount: number }) => [e.kind, e.amount])).toEqual([
      ['hold', 0.9],
      ['capture', 0.12],
      ['release', 0.78],
    ]);
  });

  it('answers a bad task list query with 400 naming the field, and keeps the request_id/trace_id lookup as it was', async () => {
    for (const [query, field] of [
      [{ limit: 0 }, 'limit'],
      [{ limit: 'ten' }, 'limit'],
      [{ account_id: 'acme' }, 'account_id'],
      [{ key_id: '123' }, 'key_id'],
      [{ channel_id: 'x' }, 'channel_id'],
      [{ status: 'done' }, 'status'],
      [{ pool: 'audio' }, 'pool'],
      [{ from: -1 }, 'from'],
      [{ from: 100, to: 100 }, 'to'],
      [{ cursor: 'not-a-cursor' }, 'cursor'],
      [{ request_id: 'r-1', limit: 5 }, 'limit'],
      [{ trace_id: 'zz' }, 'trace_id'],
      [{ colour: 'red' }, 'colour'],
    ] as const) {
      const r = await admin('/api/tasks').query(query);
      expect({ query, status: r.status, success: r.body.success }).toEqual({ query, status: 400, success: false });
      expect(r.body.message).toContain(`'${field}'`);
    }
    const lookup = await admin('/api/tasks').query({ request_id: 'no-such-request' });
    expect([lookup.status, lookup.body.data]).toEqual([200, []]);
  });

  it("shows a task's detail: summary, clipped request, channel, result, timeline from its lifecycle and ledger rows; 404 when unknown", async () => {
    const c = await customer('detail');
    const made = await post('/api/channels', {
      name: 'detail-ch',
      base_url: 'http://127.0.0.1:9',
      protocol: 'gateway',
      api_key: 'sk-detail',
      models: ['lumen-2-flex'],
    });
    expect(made.status).toBe(201);
    const channel = made.body.data as { id: string };
    const t = await submit(c, 'lumen-2-flex');
    await tasks().markSubmitted(t.id, channel.id, 'vendor-77');
    await tasks().complete(t.id, { images: [{ url: 'http://127.0.0.1:8080/v1/results/r/1.png?expires=1&signature=s' }] });
    await settleTask(db.dataSource, t.id);

    const r = await admin(`/api/tasks/${t.id}`);
    expect(r.status).toBe(200);
    const d = r.body.data;
    expect(d).toMatchObject({
      task_id: t.id,
      account_id: c.accountId,
      status: 'completed',
      progress: 100,
      price: 0.1,
      cost: 0.1,
      settled: true,
      upstream_task_id: 'vendor-77',
      channel: { id: channel.id, name: 'detail-ch' },
      result: { images: [{ url: 'http://127.0.0.1:8080/v1/results/r/1.png?expires=1&signature=s' }] },
      native: null,
      entries: [
        { kind: 'hold', amount: 0.1 },
        { kind: 'capture', amount: 0.1 },
      ],
    });
    expect(d.request.upstreamBody.prompt).toHaveLength(2001);
    expect(d.request.upstreamBody.prompt.endsWith('…')).toBe(true);
    expect(d.timeline.map((e: { event: string }) => e.event)).toEqual(['submitted', 'hold', 'started', 'completed', 'capture', 'settled']);
    expect(d.timeline.find((e: { event: string }) => e.event === 'started').detail).toBe('detail-ch');
    const times = d.timeline.map((e: { time: number }) => e.time);
    expect([...times].sort((x: number, y: number) => x - y)).toEqual(times);

    const f = await submit(c, 'lumen-2-flex');
    await tasks().fail(f.id, { code: 'task_failed', message: 'content policy' });
    await settleTask(db.dataSource, f.id);
    const failed = (await admin(`/api/tasks/${f.id}`)).body.data;
    expect(failed).toMatchObject({ status: 'failed', cost: 0, channel: null, result: null, error: { message: 'content policy' } });
    expect(failed.timeline.map((e: { event: string; detail?: string }) => [e.event, e.detail])).toEqual([
      ['submitted', undefined],
      ['hold', undefined],
      ['failed', 'content policy'],
      ['release', undefined],
      ['settled', undefined],
    ]);

    for (const id of ['task_doesnotexist000000000000', 'nope', '%27%3B']) {
      const miss = await admin(`/api/tasks/${id}`);
      expect([miss.status, miss.body.success, miss.body.data]).toEqual([404, false, null]);
      expect(miss.body.message).toMatch(/not found/);
    }
  });
});
