import { managementApp } from './management.test-kit';
import express from 'express';
import request from 'supertest';
import { createTestDatabase, freePort, waitFor, type TestDatabase } from '@gmg/testing';
import { MessagesUpstreamClient, createUpstreamAdapters } from '@gmg/upstream';
import { SIM_KEY, startSim, type SimHandle } from '../chat/chat.test-kit';

/**
 * Several keys per channel through the management API (issue 37 items 1 and 3), against a real upstream-sim process:
 * keys are write-only (ids, hints and health in answers), added, disabled and removed one at a time, and
 * POST /api/channels/{id}/test makes one real call per key.
 */
const ADMIN = 'admin-token-for-channel-keys';
const WRONG = 'sk-wrong-key-never-valid-9999';

let db: TestDatabase;
let sim: SimHandle;
let app: express.Express;
let messages: MessagesUpstreamClient;

beforeAll(async () => {
  [db, sim] = await Promise.all([createTestDatabase(), startSim()]);
  messages = new MessagesUpstreamClient();
  app = managementApp(db.dataSource, ADMIN, { trial: { adapters: createUpstreamAdapters({ timeoutMs: 5000 }), messages, timeoutMs: 5000 } });
}, 60_000);
afterAll(async () => {
  await messages?.close();
  await sim?.proc.stop();
  await db?.drop();
});

const admin = (method: 'get' | 'post' | 'patch' | 'delete', path: string) => request(app)[method](path).set('Authorization', `Bearer ${ADMIN}`);
const secrets = ['sk-alpha-0000000000001111', 'sk-bravo-0000000000002222', 'sk-charlie-00000000003333'];

it('creates a channel with api_keys: the answer lists key ids, hints and health, never a secret', async () => {
  const res = await admin('post', '/api/channels').send({
    name: 'multi',
    base_url: sim.url,
    api_keys: [secrets[0], { key: secrets[1], weight: 3 }, secrets[2]],
  });
  expect(res.status).toBe(201);
  expect(res.body.data).toMatchObject({ status: 'active', last_error: null });
  expect(res.body.data.keys.map((k: { hint: string; weight: number; status: string }) => [k.hint, k.weight, k.status])).toEqual([
    ['…1111', 1, 'active'],
    ['…2222', 3, 'active'],
    ['…3333', 1, 'active'],
  ]);
  const listed = await admin('get', '/api/channels');
  for (const body of [JSON.stringify(res.body), JSON.stringify(listed.body)]) for (const s of secrets) expect(body).not.toContain(s);
});

it('adds, disables and removes one key without touching the others', async () => {
  const ch = (await admin('post', '/api/channels').send({ name: 'one-at-a-time', base_url: sim.url, api_keys: secrets })).body.data;
  const before = ch.keys as Array<{ id: string }>;
  const added = await admin('post', `/api/channels/${ch.id}/keys`).send({ key: 'sk-delta-0000000000004444', weight: 2 });
  expect(added.status).toBe(201);
  expect(added.body.data).toEqual([expect.objectContaining({ hint: '…4444', weight: 2, status: 'active' })]);
  const disabled = await admin('patch', `/api/channels/${ch.id}/keys/${before[0]!.id}`).send({ status: 'disabled', reason: 'leaked in a log' });
  expect(disabled.body.data).toMatchObject({ id: before[0]!.id, status: 'disabled', disabled_reason: 'leaked in a log' });
  const removed = await admin('delete', `/api/channels/${ch.id}/keys/${before[1]!.id}`);
  expect(removed.status).toBe(200);
  const keys = (await admin('get', `/api/channels/${ch.id}/keys`)).body.data as Array<{ id: string; status: string; hint: string }>;
  expect(keys.map((k) => [k.hint, k.status])).toEqual([
    ['…1111', 'disabled'],
    ['…3333', 'active'],
    ['…4444', 'active'],
  ]);
  const again = await admin('delete', `/api/channels/${ch.id}/keys/${before[1]!.id}`);
  expect([again.status, again.body.message]).toEqual([404, expect.stringContaining(before[1]!.id)]);
  const replaced = await admin('patch', `/api/channels/${ch.id}`).send({ api_keys: ['sk-echo-00000000000005555'] });
  expect(replaced.body.data.keys.map((k: { hint: string }) => k.hint)).toEqual(['…5555']);
});

it('refuses bad key bodies with 400 naming the field', async () => {
  const both = await admin('post', '/api/channels').send({ name: 'x', base_url: sim.url, api_key: 'a', api_keys: ['b'] });
  expect([both.status, both.body.message]).toEqual([400, expect.stringMatching(/api_key/)]);
  const ch = (await admin('post', '/api/channels').send({ name: 'y', base_url: sim.url })).body.data;
  const empty = await admin('post', `/api/channels/${ch.id}/keys`).send({});
  expect(empty.status).toBe(400);
  const badStatus = await admin('patch', `/api/channels/${ch.id}/keys/00000000-0000-4000-8000-000000000000`).send({ status: 'cooling' });
  expect([badStatus.status, badStatus.body.message]).toEqual([400, expect.stringContaining("'status'")]);
});

it('POST /test: a healthy gateway channel answers ok for the good key and refused, with the vendor message, for the wrong one', async () => {
  const ch = (await admin('post', '/api/channels').send({ name: 'test-me', base_url: sim.url, api_keys: [SIM_KEY, WRONG], models: ['lumen-2-flex'] })).body
    .data;
  const res = await admin('post', `/api/channels/${ch.id}/test`).send({});
  expect(res.status).toBe(200);
  expect(res.body.data).toMatchObject({ channel_id: ch.id, protocol: 'gateway', model: 'lumen-2-flex' });
  const [good, bad] = res.body.data.keys;
  expect(good).toMatchObject({ key_id: ch.keys[0].id, status: 'ok' });
  expect(bad).toMatchObject({ key_id: ch.keys[1].id, status: 'refused', error: expect.stringContaining('invalid or missing API key') });
  expect(good.latency_ms).toBeGreaterThanOrEqual(0);
  expect(JSON.stringify(res.body)).not.toContain(WRONG);
});

it('POST /test: a chat channel makes one real one-token call per key; a dead address is unreachable', async () => {
  const chat = (
    await admin('post', '/api/channels').send({ name: 'chat', protocol: 'messages', base_url: sim.url, api_keys: [SIM_KEY, WRONG], models: ['lumen-chat-1'] })
  ).body.data;
  const res = await admin('post', `/api/channels/${chat.id}/test`).send({});
  expect(res.body.data.keys.map((k: { status: string }) => k.status)).toEqual(['ok', 'refused']);
  await waitFor(() => sim.logLines().some((l) => l.msg === 'messages call answered' && l.model === 'lumen-chat-1') || undefined, {
    timeoutMs: 3000,
    what: 'the one-token call in the sim log',
  });

  const dead = (await admin('post', '/api/channels').send({ name: 'dead', base_url: `http://127.0.0.1:${await freePort()}`, api_key: SIM_KEY })).body.data;
  const down = await admin('post', `/api/channels/${dead.id}/test`).send({});
  expect(down.body.data.keys).toEqual([
    expect.objectContaining({ key_id: null, hint: null, status: 'unreachable', error: expect.stringMatching(/network error/) }),
  ]);
  expect((await admin('post', '/api/channels/00000000-0000-4000-8000-000000000000/test').send({})).status).toBe(404);
});
