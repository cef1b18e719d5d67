/** The fault scenarios: each submits work, injects one fault, and ends with verify(). */
import fc from 'fast-check';
import { QUEUES, listModels } from '@gmg/contracts';
import { ChannelRepository } from '@gmg/db';
import { DuePolls, billingQueueKeyPrefix, queueKeyPrefix } from '@gmg/queue';
import { startBlackHoleProxy, waitFor } from '@gmg/testing';
import { SWEEP_INTERVAL_MS, verify, type Verdict, type World } from './world';

export interface Row extends Partial<Verdict> {
  scenario: string;
  /** Fault to healed, in ms (what "healed" means is in `healedWhen`). */
  healMs?: number;
  ok: boolean;
  note: string;
}

const SLOW = (tag: string) => (i: number) => `${tag} ${i} [sim:slow]`;

/**
 * Every open task of the ids is driven again — a job (submitting) or a due poll (polling: DuePolls.present) — and
 * both sweep schedulers exist: the Redis side is rebuilt.
 */
async function redisRebuilt(w: World, ids: string[]): Promise<boolean> {
  const open: string[] = (await w.ds.query(`SELECT id FROM tasks WHERE id = ANY($1) AND status IN ('pending','processing')`, [ids])).map(
    (r: { id: string }) => r.id,
  );
  const c = w.redis.client();
  try {
    const shard = queueKeyPrefix('chaos', QUEUES.image, 0);
    const polling = await new DuePolls(c, shard, 30_000).present(open);
    const pipe = c.pipeline();
    for (const id of open) pipe.exists(`${shard}:${QUEUES.image}:${id}`);
    pipe.exists(`${shard}:${QUEUES.image}:repeat:sweep`);
    pipe.exists(`${queueKeyPrefix('chaos', QUEUES.billing)}:${QUEUES.billing}:repeat:sweep`);
    const res = (await pipe.exec()) ?? [];
    if (res.some(([err]) => err)) return false;
    const driven = open.every((_, i) => polling[i] || res[i]![1] === 1);
    return driven && res.slice(open.length).every(([, v]) => v === 1);
  } catch {
    return false; // Redis still coming back: not rebuilt yet
  } finally {
    c.disconnect();
  }
}

const ok = (v: Verdict, extra = true): boolean => v.terminal === v.tasks && v.settledOnce === v.tasks && v.invariant && extra;

async function inFlight(w: World, name: string, n: number): Promise<{ accountId: string; key: string; ids: string[] }> {
  const a = await w.account(name);
  const ids = await w.submitMany(a.key, n, SLOW(name));
  await w.waitStatus(ids, ['processing', 'completed', 'failed'], Math.ceil(n / 2), 60_000);
  return { ...a, ids };
}

async function redisLoss(w: World, scenario: string, inject: () => Promise<void>): Promise<Row> {
  const { accountId, ids } = await inFlight(w, scenario.replace(/\W+/g, '-'), 50);
  const t0 = Date.now();
  await inject();
  const healedAt = await waitFor(async () => ((await redisRebuilt(w, ids)) ? Date.now() : undefined), {
    timeoutMs: 10 * SWEEP_INTERVAL_MS,
    intervalMs: 50,
    what: 'Redis side rebuilt',
  }).catch(() => undefined);
  const v = await verify(w, accountId, ids);
  const healMs = healedAt ? healedAt - t0 : undefined;
  const inTime = healMs !== undefined && healMs <= 2 * SWEEP_INTERVAL_MS;
  return {
    scenario,
    ...v,
    healMs,
    ok: ok(v, inTime && w.deadServices().length === 0),
    note: `heal ≤ 2 × ${SWEEP_INTERVAL_MS} ms: ${inTime ? 'yes' : 'NO'}; ${v.completed} completed, ${v.failed} failed`,
  };
}

export const flushAll = (w: World): Promise<Row> => redisLoss(w, 'Redis FLUSHALL, 50 in flight', () => w.redis.flushAll());

export const redisKill = (w: World): Promise<Row> =>
  redisLoss(w, 'Redis kill -9 + restart (empty), 50 in flight', async () => {
    await w.redis.kill9();
    await w.redis.launch();
  });

export async function postgresRestart(w: World): Promise<Row> {
  const { accountId, key, ids } = await inFlight(w, 'pg-restart', 50);
  const t0 = Date.now();
  await w.pg.stop();
  // polls while Postgres is down, past the key cache's TTL (AUTH_CACHE_TTL_MS, 2 s): the edge knows the key from
  // before (AUTH_STALE_IF_ERROR_MS) and answers from the Redis views — a short outage does not fail every poll
  await new Promise((r) => setTimeout(r, 2500));
  const polls = await Promise.all(
    ids.slice(0, 20).map((id) =>
      fetch(`${w.base}/v1/tasks/${id}`, { headers: { authorization: `Bearer ${key}` } }).then(
        (r) => r.status,
        () => 0,
      ),
    ),
  );
  await w.pg.launch();
  // our own connection pool also lost its sessions: the next queries reconnect
  const healedAt = await waitFor(async () => ((await w.healthy()) ? Date.now() : undefined), {
    timeoutMs: 60_000,
    intervalMs: 100,
    what: 'services ready again',
  }).catch(() => undefined);
  const v = await verify(w, accountId, ids);
  const dead = w.deadServices();
  const answered = polls.filter((st) => st === 200).length;
  return {
    scenario: 'Postgres restarted mid-flight',
    ...v,
    healMs: healedAt ? healedAt - t0 : undefined,
    ok: ok(v, dead.length === 0 && healedAt !== undefined && answered === polls.length),
    note: `${dead.length ? `crashed: ${dead.join(', ')}` : 'no service exited (no crash loop)'}; polls during the outage (2.5 s in): ${answered}/${polls.length} answered 200 (${polls.filter((st) => st !== 200).join(' ') || 'none other'})`,
  };
}

export async function billingKill(w: World): Promise<Row> {
  const a = await w.account('billing-kill');
  const ids = await w.submitMany(a.key, 50, (i) => `billing kill ${i}`);
  // settlements pending: tasks ending while billing dies
  await w.waitStatus(ids, ['completed', 'failed'], 5, 60_000);
  await w.procs.billing!.kill9();
  const pending = await w.count(`SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1) AND settled_at IS NULL`, [ids]);
  const t0 = Date.now();
  await w.startSvc('billing');
  const v = await verify(w, a.accountId, ids);
  return {
    scenario: 'SIGKILL billing, settlements pending',
    ...v,
    healMs: Date.now() - t0,
    ok: ok(v, w.deadServices().length === 0),
    note: `${pending} unsettled at the kill`,
  };
}

export async function workerKill(w: World): Promise<Row> {
  const { accountId, ids } = await inFlight(w, 'worker-kill', 50);
  await w.procs.worker!.kill9();
  const t0 = Date.now();
  await w.startSvc('worker');
  const v = await verify(w, accountId, ids);
  return {
    scenario: 'SIGKILL worker mid-step, 50 in flight',
    ...v,
    healMs: Date.now() - t0,
    ok: ok(v, w.deadServices().length === 0),
    note: `${v.completed} completed, ${v.failed} failed`,
  };
}

export async function edgeTerm(w: World): Promise<Row> {
  const a = await w.account('edge-term');
  const prompts = Array.from({ length: 200 }, (_, i) => `edge term ${i}`);
  const answered = new Map<string, string>();
  let next = 0;
  let done = 0;
  let stopping: Promise<unknown> | undefined;
  const lane = async (): Promise<void> => {
    for (let i = next++; i < prompts.length; i = next++) {
      try {
        const r = await w.submit(a.key, { model: 'lumen-2-flex', prompt: prompts[i] });
        if (r.status === 200) answered.set(prompts[i]!, r.body.data[0].task_id as string);
      } catch {
        // refused: connection closed or refused
      }
      if (++done === 50) stopping = w.procs.edge!.stop();
    }
  };
  await Promise.all(Array.from({ length: 8 }, lane));
  await stopping;
  const rows: Array<{ id: string; prompt: string }> = await w.ds.query(
    `SELECT id, request->'upstreamBody'->>'prompt' AS prompt FROM tasks WHERE account_id = $1`,
    [a.accountId],
  );
  const traces = rows.filter((r) => !answered.has(r.prompt));
  const lost = [...answered.values()].filter((id) => !rows.some((r) => r.id === id));
  const t0 = Date.now();
  await w.startSvc('edge');
  const v = await verify(w, a.accountId, [...answered.values()]);
  return {
    scenario: 'SIGTERM edge during 200 submits',
    ...v,
    healMs: Date.now() - t0,
    ok: ok(v, traces.length === 0 && lost.length === 0 && answered.size > 0),
    note: `${answered.size} answered 200, ${200 - answered.size} refused; refused with a trace: ${traces.length}; answered without a row: ${lost.length}`,
  };
}

/**
 * The only channel's upstream answers 503 for 30 s: submits fail, the breaker opens (the worker stops calling it),
 * tasks wait with backoff and fail cleanly (refunded) when their submit attempts run out; after the recovery new work
 * completes through the same channel (the breaker closed again). With `backup`, a second channel (lower priority,
 * straight to the simulator) takes the work: tasks fail over and complete, and after the recovery submits reach
 * the primary again.
 */
export async function upstreamOutage(w: World, backup: boolean, outageMs = 30_000): Promise<Row> {
  const a = await w.account(backup ? 'upstream-503-backup' : 'upstream-503');
  const backupId = backup ? (await new ChannelRepository(w.ds).create({ name: 'backup', baseUrl: w.simUrl, priority: -1 })).id : undefined;
  try {
    w.upstream.failing = true;
    const refusedBefore = w.upstream.refused;
    const t0 = Date.now();
    const ids = await w.submitMany(a.key, 20, (i) => `outage ${i}`);
    await waitFor(async () => (w.upstream.refused > refusedBefore ? true : undefined), { timeoutMs: 20_000, what: 'the outage to be hit' });
    // the outage lasts 30 s whatever the tasks do: a wall-clock fault, not a wait for a result
    await new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, outageMs - (Date.now() - t0))));
    w.upstream.failing = false;
    const refused = w.upstream.refused - refusedBefore;
    const recoveredAt = Date.now();
    const forwardedBefore = w.upstream.forwarded;
    // after the recovery new work reaches the primary again once its breaker lets a probe through (half-open) and
    // the probe succeeds (closed): one submit a second until one arrives there, at most 60
    const after: string[] = [];
    let reached: number | undefined;
    for (let i = 0; i < 60 && reached === undefined; i++) {
      after.push(...(await w.submitMany(a.key, 1, () => `after outage ${i}`)));
      reached = await waitFor(async () => (w.upstream.forwarded > forwardedBefore ? Date.now() : undefined), {
        timeoutMs: 1000,
        intervalMs: 50,
        what: 'a submit through the recovered primary',
      }).catch(() => undefined);
    }
    const v = await verify(w, a.accountId, [...ids, ...after]);
    const during = await w.count(`SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1) AND status = 'completed'`, [ids]);
    const afterDone = await w.count(`SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1) AND status = 'completed'`, [after]);
    const outcomeOk = backup ? during === ids.length : true;
    return {
      scenario: backup ? 'upstream 503 for 30 s, backup channel' : 'upstream 503 for 30 s, only channel',
      ...v,
      healMs: reached ? reached - recoveredAt : undefined,
      ok: ok(v, outcomeOk && afterDone === after.length && reached !== undefined && w.deadServices().length === 0),
      note:
        `${refused} submits answered 503 (breaker open: the other attempts never left the worker); during the outage ` +
        `${during}/${ids.length} completed${backup ? ' via the backup' : ', the rest failed and were refunded'}; ` +
        `after recovery ${afterDone}/${after.length} completed; ${reached === undefined ? 'the primary got NO submit within 60 s' : 'the primary took submits again (breaker closed)'}`,
    };
  } finally {
    if (backupId) await new ChannelRepository(w.ds).update(backupId, { enabled: false });
  }
}

interface BadBody {
  kind: string;
  body?: unknown;
  raw?: string | Buffer;
  contentType?: string;
}

/**
 * Bodies the contracts refuse, for one endpoint: a contract-valid base body of a model served there with one
 * schema property set to a wrong value (kept only when the model's own contract rejects it: the contract is the
 * oracle, so a pass-through of an unknown field is never counted as bad input), an unknown or missing model, huge
 * strings, deep nesting, invalid UTF-8, broken JSON and wrong content types.
 */
function badBodies(endpoint: string, n: number): BadBody[] {
  const models = listModels().filter((m) => m.contract?.endpoint === endpoint && m.contract.validate({ model: m.id, prompt: 'a cat' }, m.id).ok);
  if (!models.length) throw new Error(`no model with a minimal valid body on ${endpoint}`);
  const junk = fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double(),
    fc.string({ maxLength: 16 }),
    fc.array(fc.integer(), { maxLength: 3 }),
    fc.object({ maxDepth: 2 }),
    fc.constant('x'.repeat(100_000)),
    fc.constant(-1),
    fc.constant(1e308),
  );
  const wrongField = fc.tuple(fc.constantFrom(...models), fc.nat(), junk).map(([m, i, v]): BadBody | undefined => {
    const props = Object.keys((m.contract!.inputSchema as { properties?: Record<string, unknown> }).properties ?? {});
    const field = props[i % props.length]!;
    const body = { model: m.id, prompt: 'a cat', [field]: v };
    return m.contract!.validate(body, m.id).ok ? undefined : { kind: `wrong ${field}`, body };
  });
  /** Deeply nested JSON as text (no recursion on our side). */
  const deep = (d: number, inner: string): string => `${'{"a":'.repeat(d)}${inner}${'}'.repeat(d)}`;
  const m0 = models[0]!.id;
  const arb: fc.Arbitrary<BadBody | undefined> = fc.oneof(
    { arbitrary: wrongField, weight: 6 },
    fc.string({ maxLength: 30 }).map((m) => ({ kind: 'unknown model', body: { model: `zz-${m}`, prompt: 'a cat' } })),
    fc.constant({ kind: 'missing model', body: { prompt: 'no model' } }),
    // huge strings: only those the contract refuses count (a prompt cap is the contract's to set)
    fc.tuple(fc.constantFrom(...models), fc.integer({ min: 200_000, max: 2_000_000 })).map(([m, len]): BadBody | undefined => {
      const body = { model: m.id, prompt: 'x'.repeat(len) };
      return m.contract!.validate(body, m.id).ok ? undefined : { kind: 'huge prompt', body };
    }),
    fc.tuple(fc.constantFrom(...models), fc.nat(), fc.integer({ min: 200_000, max: 2_000_000 })).map(([m, i, len]): BadBody | undefined => {
      const props = Object.keys((m.contract!.inputSchema as { properties?: Record<string, unknown> }).properties ?? {}).filter((p) => p !== 'prompt');
      const body = { model: m.id, prompt: 'x', [props[i % props.length]!]: 'x'.repeat(len) };
      return m.contract!.validate(body, m.id).ok ? undefined : { kind: 'huge string in a field', body };
    }),
    fc
      .integer({ min: 50, max: 20_000 })
      .map((d) => ({ kind: 'deep nesting in a field', raw: `{"model":"${m0}","prompt":"x","size":${deep(d, '1')}}`, contentType: 'application/json' })),
    fc.integer({ min: 1000, max: 20_000 }).map((d) => ({ kind: 'deep nesting', raw: deep(d, '"x"'), contentType: 'application/json' })),
    // an extra field the contract passes on (issue 27: 20,000 deep there answered 500; the edge caps the depth at 128)
    fc.integer({ min: 1000, max: 20_000 }).map((d) => ({
      kind: 'deep nesting in an extra field',
      raw: `{"model":"${m0}","prompt":"x","metadata":${deep(d, '1')}}`,
      contentType: 'application/json',
    })),
    junk.map((v) => ({ kind: 'not an object', body: v })),
    fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => ({
      kind: 'invalid UTF-8',
      contentType: 'application/json',
      raw: Buffer.concat([
        Buffer.from(`{"model":"${m0}","prompt":"`),
        Buffer.from([0xc3, 0x28, 0xff]),
        Buffer.from(b.filter((x) => x !== 0x22 && x !== 0x5c)),
        Buffer.from('"}'),
      ]),
    })),
    fc.string({ maxLength: 40 }).map((x) => ({ kind: 'broken JSON', raw: `{"model": ${x}`, contentType: 'application/json' })),
    fc
      .constantFrom('text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'image/png')
      .map((ct) => ({ kind: 'wrong content type', raw: `model=${m0}&prompt=x`, contentType: ct })),
  );
  const out: BadBody[] = [];
  for (let round = 0; round < 20 && out.length < n; round++) {
    out.push(
      ...fc
        .sample(arb, n)
        .filter((b): b is BadBody => b !== undefined)
        .slice(0, n - out.length),
    );
  }
  return out;
}

/** 1,000 bodies per endpoint: every answer 4xx in the spec shape, never 5xx, no task, no money; healthy after. */
export async function badInput(w: World, perEndpoint = 1000): Promise<Row> {
  const a = await w.account('bad-input');
  const endpoints = ['/v1/images/generations', '/v1/videos/generations'];
  let n = 0;
  const wrong = new Map<string, { count: number; sample: string }>();
  const seenStatus = new Map<number, number>();
  for (const ep of endpoints) {
    const bodies = badBodies(ep, perEndpoint);
    for (let i = 0; i < bodies.length; i += 20) {
      await Promise.all(
        bodies.slice(i, i + 20).map(async (b) => {
          const r = await w.submit(a.key, b.body, { path: ep, raw: b.raw, contentType: b.contentType }).catch((e: unknown) => {
            const c = (e as { cause?: { code?: string; message?: string } }).cause;
            return { status: 0, body: `${String(e)} (${c?.code ?? ''} ${c?.message ?? ''})` };
          });
          n++;
          seenStatus.set(r.status, (seenStatus.get(r.status) ?? 0) + 1);
          const e = (r.body as { error?: { code?: unknown; message?: unknown; type?: unknown } } | undefined)?.error;
          const shaped = r.status >= 400 && r.status < 500 && e && e.code === r.status && typeof e.message === 'string' && typeof e.type === 'string';
          if (!shaped) {
            const k = `${b.kind} → ${r.status}${r.status === 0 ? ` ${String(r.body)}` : ''}`;
            const cur = wrong.get(k) ?? { count: 0, sample: JSON.stringify(b.body ?? String(b.raw)).slice(0, 60) };
            cur.count++;
            wrong.set(k, cur);
          }
        }),
      );
    }
  }
  const traces = await w.count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [a.accountId]);
  const healthy = await w.healthy();
  const v = await verify(w, a.accountId, []);
  const statuses = [...seenStatus.entries()]
    .sort((x, y) => x[0] - y[0])
    .map(([st, c]) => `${st}×${c}`)
    .join(' ');
  const bad = [...wrong.values()].reduce((x, y) => x + y.count, 0);
  const detail = [...wrong.entries()].map(([k, x]) => `${k} ×${x.count} (e.g. ${x.sample})`).join('; ');
  return {
    scenario: `bad input: ${perEndpoint} bodies × ${endpoints.length} endpoints`,
    tasks: n,
    invariant: v.invariant,
    ok: bad === 0 && traces === 0 && healthy && v.invariant && w.deadServices().length === 0,
    note: `answers ${statuses}; not 4xx in the spec shape: ${bad}${detail ? ` [${detail}]` : ''}; tasks created: ${traces}; healthy after: ${healthy}`,
  };
}

/**
 * kill -9 of the edge with 50 chat streams open (docs/messages.md, "Crash"): each call's row was written before
 * its first byte and its cost so far journalled; the restarted edge's sweeper closes the dead edge's lease, which
 * charges each call once (what it journalled, never above its reservation) and returns the rest. Checked from the
 * ledger: 50 rows, each terminal with exactly one capture, most above 0 (they had streamed), each lease
 * `hold = Σ captures + release`, and available + held = topups − captures with held = 0.
 */
export async function edgeKillStreams(w: World): Promise<Row> {
  const a = await w.account('edge-kill-streams');
  const channelId = (await new ChannelRepository(w.ds).create({ name: 'sim-messages', protocol: 'messages', baseUrl: w.simUrl })).id;
  const streams: Array<{ deltas: number; ended: Promise<void> }> = [];
  try {
    for (let i = 0; i < 50; i++) {
      const s = { deltas: 0, ended: Promise.resolve() };
      s.ended = (async () => {
        const r = await fetch(`${w.base}/v1/messages`, {
          method: 'POST',
          headers: { 'x-api-key': a.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'lumen-chat-1', max_tokens: 4096, stream: true, messages: [{ role: 'user', content: `stream ${i} [sim:slow]` }] }),
        });
        const reader = r.body!.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          s.deltas += Buffer.from(value).toString().split('content_block_delta').length - 1;
        }
      })().catch(() => undefined);
      streams.push(s);
    }
    await waitFor(() => streams.every((s) => s.deltas >= 2) || undefined, { timeoutMs: 30_000, intervalMs: 50, what: '50 streams relaying' });
    // at least one journal entry per call (every second) before the kill
    await waitFor(
      async () =>
        (await w.count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1 AND status = 'processing' AND (result->>'cost_so_far')::bigint > 0`, [
          a.accountId,
        ])) === 50 || undefined,
      { timeoutMs: 10_000, intervalMs: 100, what: 'the 50 calls journalled' },
    ).catch(() => undefined);
    const open = await w.count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1 AND pool = 'chat' AND status = 'processing'`, [a.accountId]);
    await w.procs.edge!.kill9();
    await Promise.all(streams.map((s) => s.ended));
    const t0 = Date.now();
    await w.startSvc('edge');
    // the new edge's sweeper closes the dead edge's lease once it expires
    const calls = (): Promise<number> =>
      w.count(
        `SELECT count(*)::int AS n FROM tasks t WHERE account_id = $1 AND pool = 'chat' AND status IN ('completed','failed')
         AND (SELECT count(*) FROM ledger_entries l WHERE l.task_id = t.id AND l.kind = 'capture') = 1`,
        [a.accountId],
      );
    const healedAt = await waitFor(async () => ((await calls()) === 50 ? Date.now() : undefined), {
      timeoutMs: 60_000,
      intervalMs: 200,
      what: 'the 50 calls charged',
    }).catch(() => undefined);
    const charged = await calls();
    const positive = await w.count(
      `SELECT count(*)::int AS n FROM ledger_entries l JOIN tasks t ON t.id = l.task_id WHERE t.account_id = $1 AND l.kind = 'capture' AND l.amount > 0 AND l.amount <= t.price`,
      [a.accountId],
    );
    // each lease closed, hold = Σ captures + release: checkLedger's lease invariants, in verify
    const leases = await w.count(`SELECT count(*)::int AS n FROM credit_leases WHERE account_id = $1`, [a.accountId]);
    const v = await verify(w, a.accountId, []);
    const leasesOk = leases > 0 && v.invariant;
    return {
      scenario: 'SIGKILL edge with 50 chat streams open',
      tasks: 50,
      terminal: charged,
      settledOnce: charged,
      invariant: v.invariant && leasesOk,
      healMs: healedAt ? healedAt - t0 : undefined,
      ok: open === 50 && charged === 50 && positive === 50 && leasesOk && v.invariant && w.deadServices().length === 0,
      note:
        `${open} rows written before the kill; ${charged} charged once (${positive} for what they streamed, ≤ reservation); ` +
        `${leases} leases, each closed with hold = Σ captures + release: ${leasesOk ? 'yes' : 'NO'}`,
    };
  } finally {
    await new ChannelRepository(w.ds).update(channelId, { enabled: false });
  }
}

/**
 * PgBouncer killed (-9) and started again on its port with 50 tasks in flight and 8 lanes submitting through the
 * cut: every client connection and server session is lost at once. Every submit answered 200 has its task, every
 * refused one left no row and was refused in the spec's shape (503, retryable), every task ends terminal and settled
 * once, the account invariant holds, no service exits. Runs only with the pooler (CHAOS_PGBOUNCER=1).
 */
export async function pgbouncerRestart(w: World): Promise<Row> {
  const pooler = w.pooler;
  if (!pooler) throw new Error('needs CHAOS_PGBOUNCER=1');
  const { accountId, key, ids } = await inFlight(w, 'pgbouncer-restart', 50);
  const prompts = Array.from({ length: 160 }, (_, i) => `pgbouncer cut ${i}`);
  const answered = new Map<string, string>();
  const statuses = new Map<number, number>();
  let next = 0;
  let done = 0;
  let t0 = 0;
  let cut: Promise<void> | undefined;
  const lane = async (): Promise<void> => {
    for (let i = next++; i < prompts.length; i = next++) {
      const r = await w.submit(key, { model: 'lumen-2-flex', prompt: prompts[i] }).catch(() => ({ status: 0, body: undefined }));
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status === 200) answered.set(prompts[i]!, r.body.data[0].task_id as string);
      if (++done === 30)
        cut = (async () => {
          t0 = Date.now();
          await pooler.kill9();
          await pooler.launch();
        })();
    }
  };
  await Promise.all(Array.from({ length: 8 }, lane));
  await cut;
  const healedAt = await waitFor(async () => ((await w.healthy()) ? Date.now() : undefined), {
    timeoutMs: 60_000,
    intervalMs: 100,
    what: 'services ready again',
  }).catch(() => undefined);
  const rows: Array<{ id: string; prompt: string }> = await w.ds.query(
    `SELECT id, request->'upstreamBody'->>'prompt' AS prompt FROM tasks WHERE account_id = $1 AND request->'upstreamBody'->>'prompt' LIKE 'pgbouncer cut %'`,
    [accountId],
  );
  const traces = rows.filter((r) => !answered.has(r.prompt));
  const lost = [...answered.values()].filter((id) => !rows.some((r) => r.id === id));
  const v = await verify(w, accountId, [...ids, ...answered.values()]);
  const dead = w.deadServices();
  const wrong = [...statuses.keys()].filter((s) => s !== 200 && s !== 503);
  const st = [...statuses.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([s, c]) => `${s}×${c}`)
    .join(' ');
  // what a wrong answer was, from the edge's log (its 'unexpected error' lines)
  const why = wrong.length
    ? (w.procs.edge?.output() ?? '')
        .split('\n')
        .filter((l) => l.includes('unexpected error'))
        .slice(-1)[0]
        ?.slice(0, 600)
    : undefined;
  return {
    scenario: 'PgBouncer restarted mid-flight (kill -9), 50 in flight + 160 submits through the cut',
    ...v,
    healMs: healedAt ? healedAt - t0 : undefined,
    ok: ok(v, dead.length === 0 && healedAt !== undefined && traces.length === 0 && lost.length === 0 && wrong.length === 0),
    note: `submits ${st}; refused with a trace: ${traces.length}; answered without a row: ${lost.length}${dead.length ? `; crashed: ${dead.join(', ')}` : ''}${why ? `; edge log: ${why}` : ''}`,
  };
}

/**
 * On the Redis Cluster (CHAOS_REDIS_CLUSTER=1): kill -9 the master that holds the image queue (all its keys share one
 * hash tag, so one slot) with 50 tasks in flight; its replica is promoted after cluster-node-timeout (2 s here).
 * Replication is asynchronous, so the last writes before the kill may be gone with the master: the sweeps rebuild
 * what is missing from Postgres. Every task must end terminal and settled once, the invariant hold, no service exit.
 */
export async function clusterMasterKill(w: World): Promise<Row> {
  const c = w.cluster;
  if (!c) throw new Error('needs CHAOS_REDIS_CLUSTER=1');
  const { accountId, ids } = await inFlight(w, 'cluster-master-kill', 50);
  const probe = c.nodes[0]!.port;
  const key = `${queueKeyPrefix('chaos', QUEUES.image, 0)}:${QUEUES.image}:meta`;
  const slot = Number((await c.cli(probe, 'cluster', 'keyslot', key)).trim());
  // CLUSTER NODES: <id> <ip:port@cport> <flags> <master-id> <ping> <pong> <epoch> <link> <slot ranges…>
  const owner = (await c.cli(probe, 'cluster', 'nodes'))
    .split('\n')
    .map((l) => l.trim().split(' '))
    .find(
      (f) =>
        f[2]?.includes('master') &&
        f.slice(8).some((r) => {
          const [a, b] = r.split('-').map(Number);
          return slot >= a! && slot <= (b ?? a)!;
        }),
    );
  if (!owner) throw new Error(`no master owns slot ${slot}`);
  const port = Number(owner[1]!.split('@')[0]!.split(':')[1]);
  const survivor = c.nodes.find((n) => n.port !== port)!.port;
  const t0 = Date.now();
  await c.kill9(port);
  // promoted once the cluster is whole again without it (a surviving node says cluster_state:ok and the slot has a master)
  const promotedAt = await waitFor(
    async () => {
      const info = await c.cli(survivor, 'cluster', 'info').catch(() => '');
      if (!info.includes('cluster_state:ok')) return undefined;
      const nodes = await c.cli(survivor, 'cluster', 'nodes').catch(() => '');
      const serving = nodes
        .split('\n')
        .map((l) => l.trim().split(' '))
        .some(
          (f) =>
            f[2]?.includes('master') &&
            !f[2].includes('fail') &&
            !f[1]?.startsWith(`127.0.0.1:${port}@`) &&
            f.slice(8).some((r) => {
              const [a, b] = r.split('-').map(Number);
              return slot >= a! && slot <= (b ?? a)!;
            }),
        );
      return serving ? Date.now() : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200, what: 'the replica promoted' },
  ).catch(() => undefined);
  if (!promotedAt) {
    const seen = (await c.cli(survivor, 'cluster', 'nodes').catch((e: unknown) => String(e)))
      .trim()
      .split('\n')
      .map((l) => l.split(' ').slice(1, 4).join(' '))
      .join('; ');
    return {
      scenario: "Redis Cluster: kill -9 the image queue's master, 50 in flight",
      ok: false,
      note: `master :${port} (slot ${slot}) killed; no replica promoted in 30 s; cluster nodes: ${seen}`,
    };
  }
  const v = await verify(w, accountId, ids, 180_000);
  const dead = w.deadServices();
  return {
    scenario: "Redis Cluster: kill -9 the image queue's master, 50 in flight",
    ...v,
    healMs: promotedAt ? promotedAt - t0 : undefined,
    ok: ok(v, dead.length === 0 && promotedAt !== undefined),
    note: `master :${port} (slot ${slot}) killed; replica promoted: ${promotedAt ? 'yes' : 'NO'}; ${v.completed} completed, ${v.failed} failed${dead.length ? `; crashed: ${dead.join(', ')}` : ''}`,
  };
}

/**
 * A slow upstream: every answer (submits and polls) held `delayMs` on the way, for the whole scenario — a vendor under
 * load, far from a timeout. Every task must still complete (not fail), be settled once, and no service may exit.
 */
export async function slowUpstream(w: World, delayMs = 2000): Promise<Row> {
  const a = await w.account('slow-upstream');
  w.upstream.delayMs = delayMs;
  try {
    const t0 = Date.now();
    const ids = await w.submitMany(a.key, 20, (i) => `slow upstream ${i}`);
    const v = await verify(w, a.accountId, ids);
    return {
      scenario: `slow upstream (every answer ${delayMs / 1000} s late), 20 tasks`,
      ...v,
      healMs: Date.now() - t0,
      ok: ok(v, v.completed === ids.length && w.deadServices().length === 0),
      note: `${v.completed}/${ids.length} completed (time to heal = all settled)`,
    };
  } finally {
    w.upstream.delayMs = 0;
  }
}

/**
 * Poison answers: for `poisonMs` every upstream answer is garbage (truncated JSON, wrong types, an unknown status, a
 * 2 MiB body, an HTML 502, a reset connection, a short body), with 30 tasks polling and 10 submitted meanwhile. Each
 * must end terminal and settled once (completed after the upstream heals, or failed and refunded), no service exits.
 */
export async function poisonAnswers(w: World, poisonMs = 4000): Promise<Row> {
  const { accountId, key, ids } = await inFlight(w, 'poison', 30);
  const before = w.upstream.poisoned;
  w.upstream.poison = true;
  const t0 = Date.now();
  let during: string[] = [];
  try {
    during = await w.submitMany(key, 10, (i) => `poison submit ${i}`);
    // the fault lasts poisonMs whatever the tasks do: a wall-clock fault, not a wait for a result
    await new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, poisonMs - (Date.now() - t0))));
  } finally {
    w.upstream.poison = false;
  }
  const healedAt = Date.now();
  const v = await verify(w, accountId, [...ids, ...during]);
  const reasons = (
    (await w.ds.query(`SELECT error->>'message' AS m, count(*)::int AS n FROM tasks WHERE id = ANY($1) AND status = 'failed' GROUP BY 1 ORDER BY 2 DESC`, [
      [...ids, ...during],
    ])) as Array<{ m: string; n: number }>
  )
    .map((r) => `${r.n} × "${r.m}"`)
    .join(', ');
  return {
    scenario: `poison answers from the upstream for ${poisonMs / 1000} s, 40 tasks`,
    ...v,
    healMs: Date.now() - healedAt,
    ok: ok(v, w.deadServices().length === 0 && w.upstream.poisoned > before),
    note: `${w.upstream.poisoned - before} garbage answers (7 kinds); ${v.completed} completed, ${v.failed} failed and refunded${reasons ? ` (${reasons})` : ''}; time to heal = all settled after the fault`,
  };
}

/**
 * Postgres slow, not down: `latencyMs` added to every packet between the services and Postgres (both ways) for
 * `slowMs`, while 30 tasks are submitted and run. Submits slow down; nothing may fail for it, nothing may be lost.
 */
export async function postgresSlow(w: World, latencyMs = 40, slowMs = 8000): Promise<Row> {
  const a = await w.account('pg-slow');
  w.pgProxy.delayMs = latencyMs;
  const t0 = Date.now();
  const ids: string[] = [];
  const statuses: number[] = [];
  try {
    for (let i = 0; i < 30 && Date.now() - t0 < slowMs; i++) {
      const r = await w.submit(a.key, { model: 'lumen-2-flex', prompt: `pg slow ${i}` });
      statuses.push(r.status);
      if (r.status === 200) ids.push(r.body.data[0].task_id as string);
    }
    await new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, slowMs - (Date.now() - t0))));
  } finally {
    w.pgProxy.delayMs = 0;
  }
  const healedAt = Date.now();
  const v = await verify(w, a.accountId, ids);
  const refused = statuses.filter((s) => s !== 200);
  return {
    scenario: `Postgres slow (+${latencyMs} ms per packet each way) for ${slowMs / 1000} s`,
    ...v,
    healMs: Date.now() - healedAt,
    ok: ok(v, refused.length === 0 && v.completed === ids.length && w.deadServices().length === 0),
    note: `${ids.length} submits accepted during the slowness (${refused.length ? `refused: ${refused.join(' ')}` : 'none refused'}); ${v.completed} completed`,
  };
}

/**
 * A billing outage, compressed: billing stopped while 60 tasks run to their end (their settlements and webhooks wait
 * in Redis and in the unsettled index), kept down for `outageMs` — many sweep beats, the compressed hour — then
 * started again. Every task must be settled exactly once; time to heal = the backlog drained.
 */
export async function billingOutage(w: World, outageMs = 10_000): Promise<Row> {
  const a = await w.account('billing-outage');
  await w.procs.billing!.stop();
  const t0 = Date.now();
  let ids: string[] = [];
  try {
    ids = await w.submitMany(a.key, 60, (i) => `billing outage ${i}`);
    await w.waitStatus(ids, ['completed', 'failed'], ids.length, 60_000);
    await new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, outageMs - (Date.now() - t0))));
  } finally {
    await w.startSvc('billing');
  }
  const backlog = await w.count(`SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1) AND settled_at IS NULL`, [ids]);
  const restarted = Date.now();
  const v = await verify(w, a.accountId, ids);
  return {
    scenario: `billing down ${outageMs / 1000} s while 60 tasks end (a compressed outage)`,
    ...v,
    healMs: Date.now() - restarted,
    // the backlog's size is reported, not required: a task held from a credit lease can be settled without billing's
    // queue (the edge's lease book), so on a run where all 60 went that way nothing waits for billing at all
    ok: ok(v, w.deadServices().length === 0),
    note: `${backlog} of ${ids.length} unsettled when billing came back; time to heal = that backlog settled`,
  };
}

/** What waits on shard 1 of the image pool and of billing's two queues (jobs, due polls), read on the standalone Redis. */
async function onShardOne(w: World): Promise<number | undefined> {
  if (w.cluster) return undefined; // the services' keys are on the cluster, not w.redis
  const c = w.redis.client();
  try {
    const image = queueKeyPrefix('chaos', QUEUES.image, 1);
    const [billing, webhook] = [QUEUES.billing, QUEUES.webhook].map((q) => `${billingQueueKeyPrefix('chaos', q, 1)}:${q}`);
    const res = (await c.pipeline().llen(`${image}:${QUEUES.image}:wait`).zcard(`${image}:${QUEUES.image}:delayed`).zcard(`${image}:polls`).exec()) ?? [];
    const more = await Promise.all([billing, webhook].map(async (k) => (await c.pipeline().llen(`${k}:wait`).zcard(`${k}:delayed`).exec()) ?? []));
    return [...res, ...more.flat()].reduce((n, [, v]) => n + Number(v ?? 0), 0);
  } finally {
    c.disconnect();
  }
}

/**
 * The shard count raised and lowered under load (QUEUE_SHARDS image=2,billing=2,webhook=2 and back), old and new
 * replicas side by side as in a rolling deploy: K = 1 everywhere; a K = 2 edge, worker and billing join while the
 * K = 1 ones run (submits alternate between the two edges); the K = 1 worker and billing stop (only K = 2 consumes);
 * then K = 1 comes back and the K = 2 replicas stop, leaving whatever waited on shard 1 where no replica looks — the
 * pool sweep (orphans re-added on their shard) and billing's sweep (retired shards drained, unsettled tasks re-sent)
 * must bring it home. Every task terminal, settled once, the ledger whole; submits forwarded to the upstream are
 * counted against the tasks (a duplicate submit would show as more).
 */
export async function reshardUnderLoad(w: World, perPhase = 20): Promise<Row> {
  const a = await w.account('reshard');
  const K2 = { QUEUE_SHARDS: 'image=2,billing=2,webhook=2' };
  const forwardedBefore = w.upstream.forwarded;
  const ids: string[] = [];
  const refused: number[] = [];
  const submitSome = async (bases: string[], n: number, tag: string): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const r = await w.submit(
        a.key,
        { model: 'lumen-2-flex', prompt: `reshard ${tag} ${i}${i % 3 === 0 ? ' [sim:slow]' : ''}` },
        { base: bases[i % bases.length] },
      );
      if (r.status === 200) ids.push(r.body.data[0].task_id as string);
      else refused.push(r.status);
    }
  };
  // 1. K = 1 everywhere, under load
  await submitSome([w.base], perPhase / 2, 'k1');
  // 2. raised: K = 2 replicas join the running K = 1 ones
  const edge2 = await w.startExtra('edge', K2);
  const worker2 = await w.startExtra('worker', K2);
  const billing2 = await w.startExtra('billing', K2);
  await submitSome([w.base, edge2.base], perPhase, 'mixed-up');
  // 3. the K = 1 worker and billing leave: only K = 2 consumes (both edges still submit)
  await Promise.all([w.procs.worker!.stop(), w.procs.billing!.stop()]);
  await submitSome([w.base, edge2.base], perPhase, 'k2');
  // 4. lowered: K = 1 replicas back beside the K = 2 ones, then the K = 2 ones leave mid-flight
  await Promise.all([w.startSvc('worker'), w.startSvc('billing')]);
  await submitSome([w.base, edge2.base], perPhase, 'mixed-down');
  const crashed = [edge2, worker2, billing2].filter((x) => x.proc.proc.exitCode !== null || x.proc.proc.signalCode !== null).length;
  await Promise.all([edge2.proc.stop(), worker2.proc.stop(), billing2.proc.stop()]);
  const t0 = Date.now();
  const leftOnShard1 = await onShardOne(w);
  await submitSome([w.base], perPhase / 2, 'k1-again');
  const v = await verify(w, a.accountId, ids);
  const forwarded = w.upstream.forwarded - forwardedBefore;
  return {
    scenario: `shard count raised 1 → 2 and lowered 2 → 1 under load (edge, worker, billing; old and new side by side), ${ids.length} tasks`,
    ...v,
    healMs: Date.now() - t0,
    ok: ok(v, refused.length === 0 && crashed === 0 && w.deadServices().length === 0),
    note:
      `${leftOnShard1 === undefined ? 'shard 1 not read (cluster)' : `${leftOnShard1} jobs/polls waiting on the retired shard 1 when K = 2 left`}; ` +
      `${refused.length ? `refused: ${refused.join(' ')}; ` : ''}${forwarded} submits forwarded upstream for ${ids.length} tasks; ${v.completed} completed, ${v.failed} failed; time to heal = K = 2 gone → all settled`,
  };
}

/**
 * Redis black-holed, not down: the services reach Redis through a proxy (libs/testing startBlackHoleProxy) that, for
 * `holeMs`, holds every byte either way — open connections stay open, nothing is refused, no error arrives; only the
 * services' own timeouts (REDIS_COMMAND_TIMEOUT_MS, the edge's reachability ping) can notice. 30 tasks run through
 * it and 10 more are submitted during it. Every submit must be answered within 10 s (no hang after the money
 * commit), a refused one must leave no task; after the path is back every accepted task ends terminal and settled
 * once, and no service exits. The edge, worker and billing of the world are replaced for the scenario by ones on the
 * proxy, and restored after it.
 */
export async function redisBlackHole(w: World, holeMs = 6000): Promise<Row> {
  const proxy = await startBlackHoleProxy({ port: w.redis.port });
  const onProxy = { REDIS_URL: proxy.url };
  await Promise.all((['edge', 'worker', 'billing'] as const).map((s) => w.procs[s]!.stop()));
  const extras: Awaited<ReturnType<World['startExtra']>>[] = [];
  try {
    for (const s of ['edge', 'worker', 'billing'] as const) extras.push(await w.startExtra(s, onProxy));
    const edge = extras[0]!.base;
    const a = await w.account('redis-black-hole');
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const r = await w.submit(a.key, { model: 'lumen-2-flex', prompt: `black hole ${i} [sim:slow]` }, { base: edge });
      if (r.status !== 200) throw new Error(`submit before the fault answered ${r.status}`);
      ids.push(r.body.data[0].task_id as string);
    }
    await w.waitStatus(ids, ['processing', 'completed', 'failed'], 15, 60_000);
    proxy.blackHole();
    const t0 = Date.now();
    const during: Array<{ status: number; ms: number }> = [];
    try {
      for (let i = 0; i < 10 && Date.now() - t0 < holeMs; i++) {
        const started = Date.now();
        // status 0: no answer within 15 s (a hang) or the connection failed
        const r = await w
          .submit(a.key, { model: 'lumen-2-flex', prompt: `black hole during ${i}` }, { base: edge, timeoutMs: 15_000 })
          .catch(() => ({ status: 0, body: undefined }));
        during.push({ status: r.status, ms: Date.now() - started });
        if (r.status === 200) ids.push(r.body.data[0].task_id as string);
      }
      await new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, holeMs - (Date.now() - t0))));
    } finally {
      proxy.restore();
    }
    const restoredAt = Date.now();
    const v = await verify(w, a.accountId, ids);
    const rows = await w.count(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [a.accountId]);
    const slowest = Math.max(0, ...during.map((d) => d.ms));
    const crashed = extras.filter((x) => x.proc.proc.exitCode !== null || x.proc.proc.signalCode !== null).length;
    const statuses = during.map((d) => d.status);
    return {
      scenario: `Redis black-holed ${holeMs / 1000} s (packets held, not refused), 30 in flight + submits during it`,
      ...v,
      healMs: Date.now() - restoredAt,
      ok: ok(v, slowest <= 10_000 && rows === ids.length && crashed === 0 && during.length > 0),
      note:
        `submits during the hole: ${during.length}, answered ${statuses.join(' ')} (slowest ${(slowest / 1000).toFixed(1)} s; bound 10 s); ` +
        `tasks in Postgres ${rows} = accepted ${ids.length}: ${rows === ids.length ? 'yes' : 'NO'}; ${v.completed} completed, ${v.failed} failed; ` +
        `time to heal = path back → all settled${crashed ? `; ${crashed} service(s) exited` : ''}`,
    };
  } finally {
    proxy.restore();
    await Promise.all(extras.map((x) => x.proc.stop().catch(() => undefined)));
    await proxy.close();
    await Promise.all((['edge', 'worker', 'billing'] as const).map((s) => w.startSvc(s)));
  }
}

/** CLUSTER NODES as records: id, port, flags, the slot ranges it serves (migration markers `[…]` left out). */
async function clusterNodes(c: NonNullable<World['cluster']>, probe: number): Promise<Array<{ id: string; port: number; master: boolean; ranges: string[] }>> {
  return (await c.cli(probe, 'cluster', 'nodes'))
    .split('\n')
    .map((l) => l.trim().split(' '))
    .filter((f) => f.length >= 8)
    .map((f) => ({
      id: f[0]!,
      port: Number(f[1]!.split('@')[0]!.split(':')[1]),
      master: f[2]!.includes('master') && !f[2]!.includes('fail'),
      ranges: f.slice(8).filter((r) => !r.startsWith('[')),
    }));
}

const serves = (ranges: string[], slot: number): boolean =>
  ranges.some((r) => {
    const [a, b] = r.split('-').map(Number);
    return slot >= a! && slot <= (b ?? a)!;
  });

/**
 * A Redis Cluster slot migration mid-flight (issue 38 item 7): the slot of the image queue's hash tag (its shard 0:
 * every job, due poll, event stream and the sweep cursor) moves from its master to another one, the way
 * `redis-cli --cluster reshard` does it — SETSLOT IMPORTING on the target, MIGRATING on the source, MIGRATE the keys in
 * small batches (the slot stays split for a while: BullMQ's multi-key scripts meet ASK and TRYAGAIN, which ioredis
 * follows and retries), then SETSLOT NODE on every master — with 50 tasks in flight and 20 more submitted during it.
 * Ends as every scenario: every task terminal, settled once, the ledger whole, no service exited.
 */
export async function clusterSlotMigration(w: World): Promise<Row> {
  const c = w.cluster;
  if (!c) throw new Error('needs CHAOS_REDIS_CLUSTER=1');
  const scenario = "Redis Cluster: the image queue's slot migrated to another master, 50 in flight + 20 during";
  const { accountId, key, ids } = await inFlight(w, 'cluster-slot-migration', 50);
  // a node that answers (an earlier scenario may have killed one)
  let probe = 0;
  for (const n of c.nodes) if (!probe && (await c.cli(n.port, 'ping').catch(() => '')).trim() === 'PONG') probe = n.port;
  const tagKey = `${queueKeyPrefix('chaos', QUEUES.image, 0)}:${QUEUES.image}:meta`;
  const slot = Number((await c.cli(probe, 'cluster', 'keyslot', tagKey)).trim());
  const nodes = await clusterNodes(c, probe);
  const source = nodes.find((n) => n.master && serves(n.ranges, slot));
  const target = nodes.find((n) => n.master && n !== source && n.ranges.length > 0);
  if (!source || !target) throw new Error(`slot ${slot}: no source or no target master`);
  const t0 = Date.now();
  await c.cli(target.port, 'cluster', 'setslot', String(slot), 'importing', source.id);
  await c.cli(source.port, 'cluster', 'setslot', String(slot), 'migrating', target.id);
  // 20 submits while the slot is split (their jobs land on whichever side owns their keys at that moment)
  const during = w.submitMany(key, 20, SLOW('cluster-slot-migration-during')).then(
    (got) => ({ got, error: undefined }),
    (e: unknown) => ({ got: [] as string[], error: (e as Error).message }),
  );
  const errorstats = async (port: number): Promise<Record<string, number>> =>
    Object.fromEntries([...(await c.cli(port, 'info', 'errorstats')).matchAll(/errorstat_(\w+):count=(\d+)/g)].map((m) => [m[1]!, Number(m[2])]));
  const before = await errorstats(source.port);
  // one key per MIGRATE, and the slot kept split until the 20 submits are answered and 3 s have passed: the services
  // work on a split slot (ASK for moved keys, TRYAGAIN for scripts whose keys are on both sides) — bounded in count
  let moved = 0;
  let batches = 0;
  const splitUntil = Date.now() + 3000;
  let submitsDone = false;
  void during.then(() => (submitsDone = true));
  for (; batches < 5000; batches++) {
    const keys = (await c.cli(source.port, 'cluster', 'getkeysinslot', String(slot), '1')).split('\n').filter(Boolean);
    if (keys.length === 0 && submitsDone && Date.now() >= splitUntil) break;
    if (keys.length > 0) {
      const out = (await c.cli(source.port, 'migrate', '127.0.0.1', String(target.port), '', '0', '5000', 'replace', 'keys', ...keys)).trim();
      if (out !== 'OK' && out !== 'NOKEY') throw new Error(`MIGRATE answered ${out}`);
      moved += keys.length;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const after = await errorstats(source.port);
  const redirected = ['ASK', 'TRYAGAIN', 'MOVED'].map((k) => `${k} ${(after[k] ?? 0) - (before[k] ?? 0)}`).join(', ');
  // the new owner first, then the old one, then every other master (redis-cli --cluster's order)
  await c.cli(target.port, 'cluster', 'setslot', String(slot), 'node', target.id);
  await c.cli(source.port, 'cluster', 'setslot', String(slot), 'node', target.id);
  for (const n of nodes.filter((x) => x.master && x !== source && x !== target)) await c.cli(n.port, 'cluster', 'setslot', String(slot), 'node', target.id);
  const migratedAt = Date.now();
  const owner = (await clusterNodes(c, probe)).find((n) => n.master && serves(n.ranges, slot));
  const late = await during;
  const all = [...ids, ...late.got];
  const v = await verify(w, accountId, all, 180_000);
  const dead = w.deadServices();
  const left = Number((await c.cli(source.port, 'cluster', 'countkeysinslot', String(slot))).trim());
  return {
    scenario,
    ...v,
    healMs: migratedAt - t0,
    ok: ok(v, dead.length === 0 && owner?.id === target.id && left === 0 && moved > 0 && late.error === undefined),
    note: `slot ${slot} :${source.port} → :${target.port}: ${moved} keys in ${batches} MIGRATE batches, split for ${((migratedAt - t0) / 1000).toFixed(1)} s (the source answered ${redirected}); owner after: ${owner?.port === target.port ? 'the target' : `:${owner?.port ?? '?'} (WRONG)`}; keys left on the source: ${left}; submits during: ${late.error ? `FAILED (${late.error})` : `${late.got.length} accepted`}; ${v.completed} completed, ${v.failed} failed${dead.length ? `; crashed: ${dead.join(', ')}` : ''}`,
  };
}
