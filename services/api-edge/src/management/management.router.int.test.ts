import { managementApp } from './management.test-kit';
import express from 'express';
import request from 'supertest';
import type { NormalizedRequest } from '@gmg/contracts';
import { ApiKeyRepository, TaskRepository, newTaskId, settleTask } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createTestDatabase, type TestDatabase } from '@gmg/testing';

const ADMIN = 'admin-token-for-tests';

describe('management API /api (real Postgres)', () => {
  let db: TestDatabase;
  let app: express.Express;
  const revoked: string[] = [];

  const adminReq = (method: 'get' | 'post' | 'put' | 'patch' | 'delete', path: string) => request(app)[method](path).set('Authorization', `Bearer ${ADMIN}`);

  beforeAll(async () => {
    db = await createTestDatabase();
    app = managementApp(db.dataSource, ADMIN, {
      onKeyRevoked: (id) => revoked.push(id),
      logger: createLogger({ service: 'test', level: process.env.MGMT_TEST_LOG ?? 'silent' }),
    });
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('refuses admin routes without the admin token or with a wrong one with 401 in the envelope', async () => {
    const none = await request(app).get('/api/channels');
    const wrong = await request(app).get('/api/channels').set('Authorization', 'Bearer admin-token-for-testz');
    for (const r of [none, wrong]) {
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ success: false, data: null });
      expect(r.body.message).toMatch(/Admin token/);
    }
  });

  it('creates an account with a balance, reads it and tops it up (money in currency units)', async () => {
    const created = await adminReq('post', '/api/accounts').send({ name: 'acme', balance: 1 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ success: true, data: { name: 'acme', group: 'default', balance: 1, available: 1, held: 0, spent: 0 } });
    const id = created.body.data.id as string;
    const read = await adminReq('get', `/api/accounts/${id}`);
    expect(read.body.data).toMatchObject({ id, balance: 1 });
    const topped = await adminReq('post', `/api/accounts/${id}/topups`).send({ amount: 2.5 });
    expect(topped.status).toBe(201);
    expect(topped.body.data).toMatchObject({ balance: 3.5, available: 3.5 });
  });

  it('credits a top-up under an Idempotency-Key once, however often and however concurrently it is retried', async () => {
    const created = await adminReq('post', '/api/accounts').send({ name: 'retrying-operator' });
    const id = created.body.data.id as string;
    const topup = (amount: number) => adminReq('post', `/api/accounts/${id}/topups`).set('Idempotency-Key', 'wire-2026-11-23-001').send({ amount });
    const answers = await Promise.all(Array.from({ length: 10 }, () => topup(5)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(answers.every((a) => a.body.data.balance === 5)).toBe(true);
    expect(answers.filter((a) => a.headers['idempotent-replayed'] === 'true')).toHaveLength(9);
    const other = await topup(7);
    expect([other.status, other.body.success]).toEqual([422, false]);
    expect((await adminReq('get', `/api/accounts/${id}`)).body.data).toMatchObject({ balance: 5, available: 5 });
    const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1 AND kind = 'topup'`, [id]);
    expect(n).toBe(1);
    const plain = await adminReq('post', `/api/accounts/${id}/topups`).send({ amount: 1 });
    expect([plain.status, plain.body.data.balance]).toEqual([201, 6]); // without the header every call credits
  });

  it('answers 400 naming the field for a bad body, 404 for unknown or malformed ids, 400 for invalid JSON', async () => {
    const noName = await adminReq('post', '/api/accounts').send({ balance: 1 });
    expect([noName.status, noName.body.success, noName.body.message]).toEqual([400, false, expect.stringContaining("'name'")]);
    const badAmount = await adminReq('post', '/api/accounts/00000000-0000-4000-8000-00000000abcd/topups').send({ amount: 0 });
    expect(badAmount.status).toBe(400);
    expect(badAmount.body.message).toMatch(/'amount'/);
    expect((await adminReq('get', '/api/accounts/00000000-0000-4000-8000-00000000abcd')).status).toBe(404);
    expect((await adminReq('get', '/api/accounts/not-a-uuid')).status).toBe(404);
    const badJson = await adminReq('post', '/api/accounts').set('Content-Type', 'application/json').send('{"name":');
    expect([badJson.status, badJson.body.success]).toEqual([400, false]);
    const unknownGroup = await adminReq('post', '/api/accounts').send({ name: 'x', group: 'nope' });
    expect([unknownGroup.status, unknownGroup.body.message]).toEqual([400, expect.stringContaining("'group'")]);
  });

  it('issues a key whose secret is shown once, lists keys without secrets, revokes it so it stops working', async () => {
    const acc = (await adminReq('post', '/api/accounts').send({ name: 'keys', balance: 5 })).body.data;
    const made = await adminReq('post', '/api/keys').send({ account_id: acc.id, name: 'ci', models: ['lumen-2-flex'], rps_limit: 5, inflight_limit: 3 });
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ account_id: acc.id, name: 'ci', models: ['lumen-2-flex'], rps_limit: 5, inflight_limit: 3, status: 'active' });
    const secret = made.body.data.key as string;
    expect(secret).toMatch(/^sk-/);
    const listed = await adminReq('get', `/api/keys?account_id=${acc.id}`);
    expect(listed.body.data).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain(secret);

    const bal = await request(app).get('/api/balance').set('Authorization', `Bearer ${secret}`);
    expect(bal.status).toBe(200);
    expect(bal.body.data).toMatchObject({ account_id: acc.id, balance: 5, available: 5 });

    const del = await adminReq('delete', `/api/keys/${made.body.data.id}`);
    expect([del.status, del.body.data.status]).toEqual([200, 'revoked']);
    expect(revoked).toContain(made.body.data.id);
    expect((await request(app).get('/api/balance').set('Authorization', `Bearer ${secret}`)).status).toBe(401);
    expect((await adminReq('delete', '/api/keys/00000000-0000-4000-8000-00000000abcd')).status).toBe(404);
    expect((await adminReq('post', '/api/keys').send({ account_id: '00000000-0000-4000-8000-00000000abcd' })).status).toBe(404);
    expect((await adminReq('get', '/api/keys')).status).toBe(400);
  });

  it('creates, lists and patches channels without ever returning their api_key', async () => {
    const c = await adminReq('post', '/api/channels').send({
      name: 'sim',
      base_url: 'http://127.0.0.1:9999',
      api_key: 'upstream-secret',
      models: ['lumen-2-pro'],
    });
    expect(c.status).toBe(201);
    const patched = await adminReq('patch', `/api/channels/${c.body.data.id}`).send({ enabled: false, priority: 5 });
    expect(patched.body.data).toMatchObject({ name: 'sim', enabled: false, priority: 5, base_url: 'http://127.0.0.1:9999' });
    const list = await adminReq('get', '/api/channels');
    expect(list.body.data.map((x: { name: string }) => x.name)).toContain('sim');
    for (const body of [c.body, patched.body, list.body]) expect(JSON.stringify(body)).not.toMatch(/upstream-secret|api_key/);
    expect((await adminReq('patch', `/api/channels/${c.body.data.id}`).send({})).status).toBe(400);
    expect((await adminReq('patch', '/api/channels/00000000-0000-4000-8000-00000000abcd').send({ enabled: true })).status).toBe(404);
    expect((await adminReq('post', '/api/channels').send({ name: 'x', base_url: 'ftp://h' })).status).toBe(400);
  });

  it("keeps a channel's model_map and settings, and refuses an unknown protocol, a bad map and an auth header in settings with 400 naming the field", async () => {
    const c = await adminReq('post', '/api/channels').send({
      name: 'fal-eu',
      protocol: 'gateway',
      base_url: 'http://127.0.0.1:9998',
      api_key: 'vendor-secret',
      model_map: { 'lumen-2-pro': 'fal-ai/flux-2-pro' },
      settings: { headers: { 'X-Org': 'acme' }, body: { sync_mode: false } },
    });
    expect(c.status).toBe(201);
    expect(c.body.data).toMatchObject({
      model_map: { 'lumen-2-pro': 'fal-ai/flux-2-pro' },
      settings: { headers: { 'X-Org': 'acme' }, body: { sync_mode: false } },
    });
    const patched = await adminReq('patch', `/api/channels/${c.body.data.id}`).send({ model_map: { 'lumen-2-max': 'fal-ai/flux-2-max' } });
    expect(patched.body.data.model_map).toEqual({ 'lumen-2-max': 'fal-ai/flux-2-max' });
    expect(patched.body.data.settings).toEqual({ headers: { 'X-Org': 'acme' }, body: { sync_mode: false } });
    expect(JSON.stringify((await adminReq('get', '/api/channels')).body)).not.toContain('vendor-secret');

    const refused = async (body: object, field: string) => {
      const r = await adminReq('post', '/api/channels').send({ name: 'x', base_url: 'http://127.0.0.1:1', ...body });
      expect(r.status).toBe(400);
      expect(r.body.message).toContain(`'${field}'`);
    };
    await refused({ protocol: 'carrier-pigeon' }, 'protocol');
    await refused({ model_map: { 'lumen-2-pro': '' } }, 'model_map.lumen-2-pro');
    await refused({ model_map: ['lumen-2-pro'] }, 'model_map');
    await refused({ settings: { headers: { Authorization: 'Key vendor-secret' } } }, 'settings.headers.Authorization');
    await refused({ settings: { headers: { 'x-key': 'vendor-secret' } } }, 'settings.headers.x-key');
  });

  it("takes a channel's proxy, timeouts and status_map; shows the proxy's password redacted and keeps it on a write-back; refuses bad values naming the field", async () => {
    const proxy = 'http://ops:pr0xy-pass@127.0.0.1:3128';
    const settings = { proxy, timeouts: { connect_ms: 2000, request_ms: 60_000, poll_ms: 5000 }, status_map: { '5xx': 'failover', '404': 'retry' } };
    const c = await adminReq('post', '/api/channels').send({
      name: 'behind-proxy',
      protocol: 'replicate',
      base_url: 'http://127.0.0.1:9997',
      api_key: 'k',
      settings,
    });
    expect(c.status).toBe(201);
    const shown = { ...settings, proxy: 'http://ops:***@127.0.0.1:3128/' };
    expect(c.body.data.settings).toEqual(shown);
    const listed = await adminReq('get', '/api/channels');
    expect(JSON.stringify(listed.body)).not.toContain('pr0xy-pass');
    // the answer's settings sent back as they are (an edit of another field) keep the stored secret
    const edited = await adminReq('patch', `/api/channels/${c.body.data.id}`).send({ settings: { ...shown, status_map: { '429': 'fail' } } });
    expect(edited.status).toBe(200);
    const [stored]: Array<{ settings: { proxy: string } }> = await db.dataSource.query(`SELECT settings FROM channels WHERE id = $1`, [c.body.data.id]);
    expect(stored.settings.proxy).toBe(proxy);

    const refused = async (s: object, field: string) => {
      const r = await adminReq('post', '/api/channels').send({ name: 'x', base_url: 'http://127.0.0.1:1', settings: s });
      expect(r.status).toBe(400);
      expect(r.body.message).toContain(`'${field}'`);
    };
    await refused({ proxy: 'socks5://127.0.0.1:1080' }, 'settings.proxy');
    await refused({ timeouts: { connect_ms: 10 } }, 'settings.timeouts.connect_ms');
    await refused({ timeouts: { request_ms: 3_600_000 } }, 'settings.timeouts.request_ms');
    await refused({ timeouts: { idle: 5 } }, 'settings.timeouts.idle');
    await refused({ status_map: { '200': 'retry' } }, 'settings.status_map.200');
    await refused({ status_map: { '5xx': 'ignore' } }, 'settings.status_map.5xx');
    await refused({ body: { stream_options: { include_usage: false } } }, 'settings.body.stream_options');
    await refused({ body: { model: 'other' } }, 'settings.body.model');
    await refused({ headers: { 'Content-Length': '1' } }, 'settings.headers.Content-Length');
  });

  it('saves prices and groups and reads them back', async () => {
    const put = await adminReq('put', '/api/prices').send([{ key: 'lumen-2-flex', price: 0.025, description: 'per image' }]);
    expect(put.status).toBe(200);
    expect(put.body.data).toContainEqual({ key: 'lumen-2-flex', price: 0.025, description: 'per image' });
    expect((await adminReq('get', '/api/prices')).body.data).toContainEqual({ key: 'lumen-2-flex', price: 0.025, description: 'per image' });
    expect((await adminReq('put', '/api/prices').send([{ key: 'x', price: -1 }])).status).toBe(400);

    const g = await adminReq('put', '/api/groups').send({ name: 'pro', price_ratio: 0.8, rps_limit: 5 });
    expect(g.body.data).toEqual([{ name: 'pro', price_ratio: 0.8, models: null, rps_limit: 5, inflight_limit: null }]);
    expect((await adminReq('get', '/api/groups')).body.data.map((x: { name: string }) => x.name)).toEqual(['default', 'pro']);
    expect((await adminReq('post', '/api/accounts').send({ name: 'p', group: 'pro' })).body.data.group).toBe('pro');
  });

  it('lists a key account tasks with their cost and ledger, topups, filtered and paginated by cursor', async () => {
    const acc = (await adminReq('post', '/api/accounts').send({ name: 'logs', balance: 10 })).body.data;
    const secret = (await adminReq('post', '/api/keys').send({ account_id: acc.id })).body.data.key as string;
    const keyId = (await new ApiKeyRepository(db.dataSource).authenticate(secret))!.keyId;
    const tasks = new TaskRepository(db.dataSource);
    const submit = (model: string, price: bigint) =>
      tasks.createWithHold({
        id: newTaskId(),
        accountId: acc.id,
        apiKeyId: keyId,
        model,
        requestedModel: model,
        pool: 'image',
        request: {} as NormalizedRequest,
        price,
        priceSnapshot: {},
        deadlineAt: new Date(Date.now() + 60_000),
      });
    const a = await submit('lumen-2-flex', 250_000n);
    const b = await submit('lumen-2-pro', 500_000n);
    const c = await submit('lumen-2-flex', 100_000n);
    await tasks.complete(a.id, { images: [{ url: 'http://127.0.0.1/a.png' }] });
    await tasks.fail(b.id, { code: 'task_failed', message: 'x' });
    await settleTask(db.dataSource, a.id);
    await settleTask(db.dataSource, b.id);

    const seen: Array<Record<string, unknown>> = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const r: request.Response = await request(app)
        .get('/api/logs')
        .query({ limit: 2, ...(cursor ? { cursor } : {}) })
        .set('Authorization', `Bearer ${secret}`);
      expect(r.status).toBe(200);
      expect(r.body.data.items.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.data.items);
      cursor = r.body.data.next_cursor;
      if (!cursor) break;
    }
    expect(seen.map((i) => i.type)).toEqual(['task', 'task', 'task', 'topup']);
    const byId = Object.fromEntries(seen.filter((i) => i.type === 'task').map((i) => [i.task_id, i]));
    expect(byId[a.id]).toMatchObject({
      model: 'lumen-2-flex',
      status: 'completed',
      cost: 0.25,
      settled: true,
      entries: [
        { kind: 'hold', amount: 0.25 },
        { kind: 'capture', amount: 0.25 },
      ],
    });
    expect(byId[b.id]).toMatchObject({ status: 'failed', cost: 0, price: 0.5, entries: [{ kind: 'hold' }, { kind: 'release', amount: 0.5 }] });
    expect(byId[c.id]).toMatchObject({ status: 'pending', cost: 0.1, settled: false });
    expect(seen[3]).toMatchObject({ type: 'topup', amount: 10 });

    const flex = await request(app).get('/api/logs?model=lumen-2-flex').set('Authorization', `Bearer ${secret}`);
    expect(flex.body.data.items.map((i: { task_id: string }) => i.task_id).sort()).toEqual([a.id, c.id].sort());
    const future = Math.floor(Date.now() / 1000) + 3600;
    const none = await request(app).get(`/api/logs?from=${future}`).set('Authorization', `Bearer ${secret}`);
    expect(none.body.data).toEqual({ items: [], next_cursor: null });
    const all = await request(app).get(`/api/logs?to=${future}`).set('Authorization', `Bearer ${secret}`);
    expect(all.body.data.items).toHaveLength(4);

    expect((await request(app).get('/api/logs?limit=101').set('Authorization', `Bearer ${secret}`)).status).toBe(400);
    expect((await request(app).get('/api/logs?cursor=garbage').set('Authorization', `Bearer ${secret}`)).status).toBe(400);
    expect((await request(app).get('/api/logs')).status).toBe(401);
    expect((await request(app).get('/api/logs').set('Authorization', `Bearer ${ADMIN}`)).status).toBe(401);
  });

  it('answers an unknown management route with 404 in the envelope', async () => {
    const r = await adminReq('get', '/api/nothing-here');
    expect([r.status, r.body.success, r.body.data]).toEqual([404, false, null]);
  });
});
