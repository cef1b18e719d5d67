import { managementApp } from './management.test-kit';
import express from 'express';
import request from 'supertest';
import { AccountRepository, ApiKeyRepository, UsageRepository } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createTestDatabase, type TestDatabase } from '@gmg/testing';

/**
 * GET /api/usage and /api/usage/self over a small dataset this test writes itself — tasks and chat calls with their
 * ledger rows, at chosen hours and durations — and the rollup run as the billing sweep runs it. Every expected figure
 * is computed here from the rows the test wrote (its own ledger captures, its own durations), never by the code
 * under test.
 */
const ADMIN = 'usage-admin-token-0123456789';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** A fixed UTC day well in the past (so every row is settled long before the rollup's lag), and the next one. */
const D0 = Math.floor((Date.now() - 10 * DAY) / DAY) * DAY;

interface Row {
  id: string;
  account: string;
  key: string;
  model: string;
  chat: boolean;
  failed: boolean;
  channel: string | null;
  createdMs: number;
  durationMs: number;
  price: bigint;
  /** What the ledger captures (the rest is released); 0 for a failed task. */
  capture: bigint;
  /** When it was settled; default its end. */
  settledMs?: number;
}

let db: TestDatabase;
let app: express.Express;
let usage: UsageRepository;
const ids: { accounts: string[]; keys: string[]; secrets: string[]; channels: string[] } = { accounts: [], keys: [], secrets: [], channels: [] };
const written: Row[] = [];
let seq = 0;

/** Writes a settled task (or chat call) and its ledger rows: hold, then capture and/or release. */
async function writeTask(r: Omit<Row, 'id'>): Promise<Row> {
  const row = { ...r, id: `task_usage${String(seq++).padStart(8, '0')}` };
  const created = new Date(row.createdMs);
  const done = new Date(row.createdMs + row.durationMs);
  const settled = new Date(row.settledMs ?? row.createdMs + row.durationMs);
  await db.dataSource.query(
    `INSERT INTO tasks (id, account_id, api_key_id, model, requested_model, pool, status, progress, request, price, price_snapshot,
                        channel_id, created_at, started_at, completed_at, settled_at, deadline_at)
     VALUES ($1, $2, $3, $4, $4, $5, $6, 100, '{}', $7, '{}', $8, $9, $9, $10, $11, $10)`,
    [
      row.id,
      row.account,
      row.key,
      row.model,
      row.chat ? 'chat' : 'image',
      row.failed ? 'failed' : 'completed',
      row.price.toString(),
      row.channel,
      created,
      done,
      settled,
    ],
  );
  const entries: Array<[string, bigint]> = [['hold', row.price]];
  if (row.capture > 0n) entries.push(['capture', row.capture]);
  if (row.price - row.capture > 0n) entries.push(['release', row.price - row.capture]);
  for (const [kind, amount] of entries) {
    await db.dataSource.query(`INSERT INTO ledger_entries (account_id, task_id, kind, amount) VALUES ($1, $2, $3, $4)`, [
      row.account,
      row.id,
      kind,
      amount.toString(),
    ]);
  }
  written.push(row);
  return row;
}

/** Rolls everything up, as the billing sweep does, in small batches (so buckets are merged across batches). */
const rollAll = async (): Promise<number> => {
  let total = 0;
  for (let i = 0; i < 1000; i++) {
    const n = await usage.rollup({ limit: 7, lagMs: 0 });
    total += n;
    if (n === 0) return total;
  }
  throw new Error('the rollup never caught up');
};

/** The exact q-quantile of durations (nearest rank), the figure a report must bound from above within 25 %. */
function quantile(ms: number[], q: number): number | null {
  if (ms.length === 0) return null;
  const sorted = [...ms].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1];
}

interface Expected {
  tasks: number;
  task_failures: number;
  chat_calls: number;
  chat_failures: number;
  spend: number;
  task_ms: number[];
  chat_ms: number[];
}

/** Groups this test's own rows the way the report should. */
function expectedGroups(rows: Row[], keyOf: (r: Row) => string): Map<string, Expected> {
  const out = new Map<string, Expected>();
  for (const r of rows) {
    const k = keyOf(r);
    const e = out.get(k) ?? { tasks: 0, task_failures: 0, chat_calls: 0, chat_failures: 0, spend: 0, task_ms: [], chat_ms: [] };
    if (r.chat) {
      e.chat_calls++;
      if (r.failed) e.chat_failures++;
      e.chat_ms.push(r.durationMs);
    } else {
      e.tasks++;
      if (r.failed) e.task_failures++;
      e.task_ms.push(r.durationMs);
    }
    e.spend += Number(r.capture) / 1_000_000;
    out.set(k, e);
  }
  return out;
}

/** A report's groups against the expected ones: counts and money exactly, percentiles within their bucket. */
function expectReport(groups: Array<Record<string, unknown>>, expected: Map<string, Expected>, keyOf: (g: Record<string, unknown>) => string): void {
  expect(groups.map(keyOf).sort()).toEqual([...expected.keys()].sort());
  for (const g of groups) {
    const e = expected.get(keyOf(g))!;
    expect({ key: keyOf(g), tasks: g.tasks, task_failures: g.task_failures, chat_calls: g.chat_calls, chat_failures: g.chat_failures }).toEqual({
      key: keyOf(g),
      tasks: e.tasks,
      task_failures: e.task_failures,
      chat_calls: e.chat_calls,
      chat_failures: e.chat_failures,
    });
    expect(g.spend).toBeCloseTo(e.spend, 6);
    for (const [field, ms, q] of [
      ['task_p50_ms', e.task_ms, 0.5],
      ['task_p99_ms', e.task_ms, 0.99],
      ['chat_p50_ms', e.chat_ms, 0.5],
      ['chat_p99_ms', e.chat_ms, 0.99],
    ] as const) {
      const truth = quantile(ms, q);
      if (truth === null) expect(g[field]).toBeNull();
      else {
        expect(g[field]).toBeGreaterThanOrEqual(truth);
        expect(g[field]).toBeLessThanOrEqual(Math.ceil(Math.max(truth, 10) * 1.25) + 1);
      }
    }
  }
}

const admin = (path: string) => request(app).get(path).set('Authorization', `Bearer ${ADMIN}`);
const secs = (ms: number) => Math.floor(ms / 1000);

beforeAll(async () => {
  db = await createTestDatabase();
  usage = new UsageRepository(db.dataSource);
  const accounts = new AccountRepository(db.dataSource);
  const keys = new ApiKeyRepository(db.dataSource);
  for (let a = 0; a < 2; a++) ids.accounts.push((await accounts.create({ name: `usage-${a}` })).id);
  // keys 0 and 1 of account 0, key 2 of account 1
  for (const account of [ids.accounts[0], ids.accounts[0], ids.accounts[1]]) {
    const made = await keys.create({ accountId: account });
    ids.keys.push(made.key.id);
    ids.secrets.push(made.secret);
  }
  for (let c = 0; c < 2; c++) {
    const [row] = (await db.dataSource.query(`INSERT INTO channels (name, base_url) VALUES ($1, 'http://127.0.0.1:9') RETURNING id`, [`usage-${c}`])) as Array<{
      id: string;
    }>;
    ids.channels.push(row.id);
  }
  app = managementApp(db.dataSource, ADMIN, { logger: createLogger({ service: 'test', level: process.env.USAGE_TEST_LOG ?? 'silent' }) });
  // 60 rows over two days: three keys, three models (one with a comma, a quote and a leading '=' for the CSV),
  // two channels and none, every 10th a chat call, every 7th failed, durations from 5 ms to ~2 min
  const models = ['lumen-2-flex', 'pixel-v6', '=odd, "model"'];
  for (let i = 0; i < 60; i++) {
    const chat = i % 10 === 3;
    const failed = i % 7 === 2;
    const price = BigInt(100_000 + (i % 5) * 25_000);
    await writeTask({
      account: i % 3 === 2 ? ids.accounts[1] : ids.accounts[0],
      key: ids.keys[i % 3],
      model: models[i % 3 === 1 ? 1 : i % 4 === 0 ? 2 : 0],
      chat,
      failed,
      channel: i % 5 === 4 ? null : ids.channels[i % 2],
      createdMs: D0 + (i % 2) * DAY + ((i * 5) % 24) * HOUR + (i % 50) * 60_000,
      durationMs: chat ? 200 + ((i * 977) % 9000) : 5 + ((i * 7919) % 120_000),
      price,
      capture: failed ? 0n : i % 4 === 1 ? price / 2n : price,
    });
  }
  expect(await rollAll()).toBe(60);
}, 60_000);
afterAll(async () => db?.drop());

const whole = `from=${secs(D0)}&to=${secs(D0 + 2 * DAY)}`;

describe('GET /api/usage (admin)', () => {
  it('by day and model: counts, failures, the ledger’s captures and the duration percentiles of the rows written', async () => {
    const r = await admin(`/api/usage?${whole}&group_by=day,model`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ from: secs(D0), to: secs(D0 + 2 * DAY), group_by: ['day', 'model'] });
    expect(r.body.data.counted_until).toBe(secs(Math.max(...written.map((w) => w.settledMs ?? w.createdMs + w.durationMs))));
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    expectReport(
      r.body.data.groups,
      expectedGroups(written, (w) => `${day(w.createdMs)}|${w.model}`),
      (g) => `${g.day as string}|${g.model as string}`,
    );
  });

  it('by account, key and channel (null: no channel), and by hour', async () => {
    const byOwner = await admin(`/api/usage?${whole}&group_by=account,key,channel`);
    expectReport(
      byOwner.body.data.groups,
      expectedGroups(written, (w) => `${w.account}|${w.key}|${w.channel}`),
      (g) => `${g.account_id as string}|${g.key_id as string}|${g.channel_id as string | null}`,
    );
    const byHour = await admin(`/api/usage?${whole}&group_by=hour`);
    expectReport(
      byHour.body.data.groups,
      expectedGroups(written, (w) => new Date(Math.floor(w.createdMs / HOUR) * HOUR).toISOString()),
      (g) => g.hour as string,
    );
  });

  it('a range that starts and ends inside a day counts only its hours (whole days from the daily rollup, the edges hourly)', async () => {
    const from = D0 + 5 * HOUR + 1234;
    const to = D0 + DAY + 7 * HOUR - 1000;
    const r = await admin(`/api/usage?from=${secs(from)}&to=${secs(to)}&group_by=model`);
    // rounded to whole hours: from down, to up
    const [lo, hi] = [Math.floor(from / HOUR) * HOUR, Math.ceil(to / HOUR) * HOUR];
    expect(r.body.data).toMatchObject({ from: secs(lo), to: secs(hi) });
    const inRange = written.filter((w) => w.createdMs >= lo && w.createdMs < hi);
    expect(inRange.length).toBeGreaterThan(0);
    expect(inRange.length).toBeLessThan(written.length);
    expectReport(
      r.body.data.groups,
      expectedGroups(inRange, (w) => w.model),
      (g) => g.model as string,
    );
    // a range of whole days with a day in the middle: D0 - 1 day .. D0 + 3 days
    const wide = await admin(`/api/usage?from=${secs(D0 - DAY + 3 * HOUR)}&to=${secs(D0 + 3 * DAY)}&group_by=model`);
    expectReport(
      wide.body.data.groups,
      expectedGroups(written, (w) => w.model),
      (g) => g.model as string,
    );
  });

  it('a range over 2 days is rounded to whole UTC days (read from the daily rollup alone)', async () => {
    const r = await admin(`/api/usage?from=${secs(D0 - 6 * DAY + 3 * HOUR)}&to=${secs(D0 + 2 * DAY + 5 * HOUR)}&group_by=day`);
    expect(r.body.data).toMatchObject({ from: secs(D0 - 6 * DAY), to: secs(D0 + 3 * DAY) });
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    expectReport(
      r.body.data.groups,
      expectedGroups(written, (w) => day(w.createdMs)),
      (g) => g.day as string,
    );
  });

  it('filters by account, key, model and channel (`none`: tasks no channel served)', async () => {
    const byAccount = await admin(`/api/usage?${whole}&group_by=key&account_id=${ids.accounts[1]}`);
    expectReport(
      byAccount.body.data.groups,
      expectedGroups(
        written.filter((w) => w.account === ids.accounts[1]),
        (w) => w.key,
      ),
      (g) => g.key_id as string,
    );
    const noChannel = await admin(`/api/usage?${whole}&group_by=model&channel_id=none&model=pixel-v6`);
    expectReport(
      noChannel.body.data.groups,
      expectedGroups(
        written.filter((w) => w.channel === null && w.model === 'pixel-v6'),
        (w) => w.model,
      ),
      (g) => g.model as string,
    );
    const byKey = await admin(`/api/usage?${whole}&group_by=day&key_id=${ids.keys[1]}&channel_id=${ids.channels[1]}`);
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    expectReport(
      byKey.body.data.groups,
      expectedGroups(
        written.filter((w) => w.key === ids.keys[1] && w.channel === ids.channels[1]),
        (w) => day(w.createdMs),
      ),
      (g) => g.day as string,
    );
  });

  it('answers CSV for format=csv or Accept: text/csv, quoted per RFC 4180, a formula-looking text defused', async () => {
    const viaQuery = await admin(`/api/usage?${whole}&group_by=model&format=csv`);
    const viaAccept = await admin(`/api/usage?${whole}&group_by=model`).set('Accept', 'text/csv');
    for (const r of [viaQuery, viaAccept]) {
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(r.headers['content-disposition']).toBe(`attachment; filename="usage-${secs(D0)}-${secs(D0 + 2 * DAY)}.csv"`);
    }
    const lines = viaQuery.text.split('\r\n');
    expect(lines[0]).toBe('model,tasks,task_failures,chat_calls,chat_failures,spend,task_p50_ms,task_p99_ms,chat_p50_ms,chat_p99_ms');
    expect(lines.at(-1)).toBe('');
    const json = (await admin(`/api/usage?${whole}&group_by=model`)).body.data.groups as Array<Record<string, unknown>>;
    expect(lines.length).toBe(json.length + 2);
    const odd = json.find((g) => g.model === '=odd, "model"')!;
    const cell = (v: unknown) => (v === null ? '' : String(v as number));
    expect(lines).toContain(
      [
        `"'=odd, ""model"""`,
        ...['tasks', 'task_failures', 'chat_calls', 'chat_failures', 'spend', 'task_p50_ms', 'task_p99_ms', 'chat_p50_ms', 'chat_p99_ms'].map((f) =>
          cell(odd[f]),
        ),
      ].join(','),
    );
    // JSON stays the default for a client that accepts both
    expect((await admin(`/api/usage?${whole}&group_by=model`).set('Accept', 'application/json, text/csv')).body.success).toBe(true);
  });

  it('refuses what it cannot answer with 400 naming the field', async () => {
    const cases: Array<[string, string]> = [
      [`from=0&to=${93 * 86400 + 1}`, 'to'],
      [`from=100&to=100`, 'to'],
      [`from=0&to=${2 * 86400 + 3600}&group_by=hour`, 'group_by'],
      [`${whole}&group_by=day,hour`, 'group_by'],
      [`${whole}&group_by=week`, 'group_by'],
      [`to=100`, 'from'],
      [`${whole}&account_id=nope`, 'account_id'],
      [`${whole}&channel_id=abc`, 'channel_id'],
      [`${whole}&format=xml`, 'format'],
    ];
    for (const [qs, field] of cases) {
      const r = await admin(`/api/usage?${qs}`);
      expect({ qs, status: r.status, success: r.body.success }).toEqual({ qs, status: 400, success: false });
      expect(r.body.message).toContain(`'${field}'`);
    }
    expect((await request(app).get(`/api/usage?${whole}`)).status).toBe(401);
    // an API key is not the admin token
    expect((await request(app).get(`/api/usage?${whole}`).set('Authorization', `Bearer ${ids.secrets[0]}`)).status).toBe(401);
  });
});

describe('GET /api/usage/self (API key)', () => {
  it('shows the calling key its own rows only, and refuses a query naming an account or a key', async () => {
    const r = await request(app).get(`/api/usage/self?${whole}&group_by=key,model`).set('Authorization', `Bearer ${ids.secrets[1]}`);
    expect(r.status).toBe(200);
    expectReport(
      r.body.data.groups,
      expectedGroups(
        written.filter((w) => w.key === ids.keys[1]),
        (w) => `${w.key}|${w.model}`,
      ),
      (g) => `${g.key_id as string}|${g.model as string}`,
    );
    for (const field of ['account_id', 'key_id']) {
      const refused = await request(app).get(`/api/usage/self?${whole}&${field}=${ids.keys[0]}`).set('Authorization', `Bearer ${ids.secrets[1]}`);
      expect(refused.status).toBe(400);
      expect(refused.body.message).toContain(`'${field}'`);
    }
    expect((await request(app).get(`/api/usage/self?${whole}`).set('Authorization', 'Bearer sk-not-a-key')).status).toBe(401);
  });
});

describe('the rollup', () => {
  it('counts each settled task once: a rerun adds nothing; new tasks merge into the same buckets; one settled within the lag waits', async () => {
    expect(await rollAll()).toBe(0);
    const before = (await admin(`/api/usage?${whole}&group_by=model`)).body.data.groups as Array<Record<string, unknown>>;
    expect(before.length).toBeGreaterThan(0);
    // two more tasks in hours that already have rows (settled late: 2 minutes ago), one with a duration far from the others
    const { id: _id, ...base } = written[0];
    const now = Date.now();
    await writeTask({ ...base, createdMs: base.createdMs + 1000, durationMs: 3_000_000, failed: false, capture: 77_000n, settledMs: now - 120_000 });
    await writeTask({ ...base, createdMs: base.createdMs + 2000, durationMs: 1, failed: true, capture: 0n, settledMs: now - 120_000 });
    // settled just now: inside the default lag, not rolled up yet
    await writeTask({ ...base, createdMs: now - 500, durationMs: 400, failed: false, capture: 5_000n, settledMs: now });
    expect(await usage.rollup()).toBe(2);
    const r = await admin(`/api/usage?${whole}&group_by=model`);
    const old = written.filter((w) => w.createdMs < D0 + 2 * DAY);
    expectReport(
      r.body.data.groups,
      expectedGroups(old, (w) => w.model),
      (g) => g.model as string,
    );
    // and the recent one once the lag is over (here: no lag)
    expect(await usage.rollup({ lagMs: 0 })).toBe(1);
    expect(await usage.rollup({ lagMs: 0 })).toBe(0);
    const recent = await admin(`/api/usage?from=${secs(now - HOUR)}&to=${secs(now + HOUR)}&group_by=model`);
    expectReport(
      recent.body.data.groups,
      expectedGroups(written.slice(-1), (w) => w.model),
      (g) => g.model as string,
    );
  });
});
