import Anthropic from '@anthropic-ai/sdk';
import { ChannelRepository } from '@gmg/db';
import { freePort, startService, waitFor, type ServiceProcess } from '@gmg/testing';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

type Row = Record<string, unknown>;

export const SIM_KEY = 'sim-channel-key-0123456789';

export interface SimHandle {
  url: string;
  proc: ServiceProcess;
  /** The sim's log lines (JSON) so far. */
  logLines(): Array<Record<string, unknown>>;
}

/** A real upstream-sim process on a free loopback port, optionally answering every messages call with a fault. */
export async function startSim(fault?: 'overloaded' | 'rate_limited' | 'hang'): Promise<SimHandle> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = { PORT: String(port), SIM_API_KEY: SIM_KEY, LOG_LEVEL: 'info', SIM_MESSAGES_SLOW_DELTA_MS: '20' };
  if (fault) env.SIM_MESSAGES_FAULT = fault;
  const proc = await startService('upstream-sim', env, `${url}/healthz`);
  return {
    url,
    proc,
    logLines: () =>
      proc
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => {
          try {
            return JSON.parse(l) as Record<string, unknown>;
          } catch {
            return {};
          }
        }),
  };
}

export const addMessagesChannel = (h: EdgeHarness, name: string, sim: SimHandle, models: string[], priority = 0, groups?: string[]) =>
  new ChannelRepository(h.db.dataSource).create({ name, protocol: 'messages', baseUrl: sim.url, apiKey: SIM_KEY, models, priority, groups });

/** The vendor's client pointed at the gateway by baseURL alone (no retries: each test sees exactly one call). */
export const sdkFor = (h: EdgeHarness, key: string) => new Anthropic({ apiKey: key, baseURL: h.baseUrl, maxRetries: 0 });

export { startEdgeHarness, type EdgeHarness };

/** The ended chat calls of an account, newest last (a running call's row exists from before its first byte). */
export const chatCalls = async (h: EdgeHarness, accountId: string): Promise<Row[]> =>
  h.db.dataSource.query(
    `SELECT id, status, price::text AS price, result FROM tasks WHERE account_id = $1 AND pool = 'chat' AND status NOT IN ('pending','processing') ORDER BY created_at, id`,
    [accountId],
  );

/**
 * The calls of an account appear once their batch is written (a few ms after the answer): this waits for the
 * account's next one (the first after `seen` calls) and returns it.
 */
export async function nextCall(h: EdgeHarness, accountId: string, seen: number): Promise<Row> {
  const rows = await waitFor(
    async () => {
      const r = await chatCalls(h, accountId);
      return r.length > seen ? r : undefined;
    },
    { timeoutMs: 5000, what: `chat call #${seen + 1} of the account` },
  );
  return rows[seen];
}

/** A recorded call's money: what it reserved (its task price) and its one capture (bigint minor units). */
export async function chargeOf(h: EdgeHarness, taskId: string): Promise<{ reserved: bigint; capture: bigint }> {
  const rows: Row[] = await h.db.dataSource.query(`SELECT kind, amount::text AS amount FROM ledger_entries WHERE task_id = $1 ORDER BY id`, [taskId]);
  expect(rows.map((r) => r.kind)).toEqual(['capture']);
  const [task]: Row[] = await h.db.dataSource.query(`SELECT price::text AS price FROM tasks WHERE id = $1`, [taskId]);
  const charge = { reserved: BigInt(task.price as string), capture: BigInt(rows[0].amount as string) };
  expect(charge.capture <= charge.reserved).toBe(true);
  return charge;
}

/** The account's credit leases: each one's hold and (once closed) release, and what it paid. */
export async function leasesOf(h: EdgeHarness, accountId: string): Promise<Row[]> {
  return h.db.dataSource.query(
    `SELECT c.id, c.status, c.amount::text, c.used::text,
            (SELECT amount::text FROM ledger_entries WHERE task_id = c.id AND kind = 'hold') AS hold,
            (SELECT amount::text FROM ledger_entries WHERE task_id = c.id AND kind = 'release') AS release
       FROM credit_leases c WHERE account_id = $1 ORDER BY created_at`,
    [accountId],
  );
}

/** Minor units for token counts at per-million prices read from the price table (ceil, as documented). */
export async function expectedCost(
  h: EdgeHarness,
  model: string,
  u: { input: number; output: number; cacheWrite?: number; cacheRead?: number },
): Promise<bigint> {
  const p = async (k: string) => h.priceOf(`${model}@${k}`);
  const micro =
    BigInt(u.input) * (await p('input')) +
    BigInt(u.output) * (await p('output')) +
    BigInt(u.cacheWrite ?? 0) * (await p('cache_write')) +
    BigInt(u.cacheRead ?? 0) * (await p('cache_read'));
  return (micro + 999_999n) / 1_000_000n;
}

export async function balanceOf(h: EdgeHarness, accountId: string): Promise<{ available: bigint; held: bigint; spent: bigint }> {
  const [r]: Row[] = await h.db.dataSource.query(`SELECT available::text, held::text, spent::text FROM accounts WHERE id = $1`, [accountId]);
  return { available: BigInt(r.available as string), held: BigInt(r.held as string), spent: BigInt(r.spent as string) };
}

/** One edge with one sim messages channel for `models`, and one funded customer; `close` stops all of it. */
export async function startChatWorld(models: string[], env: Record<string, string> = {}) {
  const [h, sim] = await Promise.all([startEdgeHarness({ env: { MESSAGES_CHANNEL_CACHE_TTL_MS: '0', ...env } }), startSim()]);
  await addMessagesChannel(h, 'sim-messages', sim, models);
  const { accountId, key } = await h.newCustomer({ balance: 50 });
  const close = async (): Promise<void> => {
    await h.background.creditLeases.close();
    await sim.proc.stop();
    await h.close();
  };
  return { h, sim, accountId, key, close };
}

/**
 * The failover set-up: an edge and two sim messages channels serving the `default` group only: `healthy`
 * (lumen-chat-1, lumen-chat-1-mini, priority 0) and `overloaded` (every call a 529; `overloadedModels`, priority 10:
 * tried first). `close` stops all of it.
 */
export async function startFailoverWorld(overloadedModels: string[], env: Record<string, string> = {}) {
  const [h, healthy, sick] = await Promise.all([startEdgeHarness({ env: { MESSAGES_CHANNEL_CACHE_TTL_MS: '0', ...env } }), startSim(), startSim('overloaded')]);
  const groups = ['default'];
  await addMessagesChannel(h, 'healthy', healthy, ['lumen-chat-1', 'lumen-chat-1-mini'], 0, groups);
  await addMessagesChannel(h, 'overloaded', sick, overloadedModels, 10, groups);
  const close = async (): Promise<void> => {
    await h.background.creditLeases.close();
    await Promise.all([healthy.proc.stop(), sick.proc.stop()]);
    await h.close();
  };
  return { h, healthy, sick, close };
}
