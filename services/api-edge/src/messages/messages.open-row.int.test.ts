import type Anthropic from '@anthropic-ai/sdk';
import { waitFor } from '@gmg/testing';
import type { QueryRunner } from 'typeorm';
import { chargeOf, chatCalls, expectedCost, sdkFor, startChatWorld, type EdgeHarness } from '../chat/chat.test-kit';

/**
 * The call's open row is not on the first byte's path (issue 36, docs/messages.md "Open"): it is issued before the
 * upstream request, a whole answer goes out without waiting for it, and a stream's writes after its first wait for
 * it (a kill -9 of the edge charges a call what it journalled, and only a written row is journalled). The open row
 * is held back here by a lock on the account's lease row (its statement, `gmg_write_chat_calls`, takes the lease `FOR SHARE`).
 */
let h: EdgeHarness;
let accountId: string;
let client: Anthropic;
let close: () => Promise<void>;

beforeAll(async () => {
  const w = await startChatWorld(['lumen-chat-1']);
  ({ h, accountId, close } = w);
  client = sdkFor(h, w.key);
}, 60_000);
afterAll(async () => {
  await close?.();
});

const params = (content: string, max_tokens = 64) => ({ model: 'lumen-chat-1', max_tokens, messages: [{ role: 'user' as const, content }] });

/** Rows of the account's chat calls (running or ended). */
const rows = async (): Promise<number> =>
  Number((await h.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1 AND pool = 'chat'`, [accountId]))[0].n);

/** Holds the account's active lease row locked (FOR UPDATE) until `release`. */
async function lockLease(): Promise<{ release: () => Promise<void> }> {
  const q: QueryRunner = h.db.dataSource.createQueryRunner();
  await q.connect();
  await q.startTransaction();
  const locked = await q.query(`SELECT id FROM credit_leases WHERE account_id = $1 AND status = 'active' FOR UPDATE`, [accountId]);
  expect(locked).toHaveLength(1);
  return {
    release: async () => {
      await q.commitTransaction();
      await q.release();
    },
  };
}

/** The open-row statements waiting on a lock right now (the edge's own connections). */
const blockedOpens = async (): Promise<number> =>
  Number(
    (
      await h.db.dataSource.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%gmg_write_chat_calls%'`,
      )
    )[0].n,
  );

it('a whole answer does not wait for its open row; a stream sends its first write, then waits for its row; each call charged once', async () => {
  // a first call grants the account's lease (and is recorded)
  await client.messages.create(params('warm up'));
  await waitFor(async () => ((await chatCalls(h, accountId)).length === 1 ? true : undefined), { what: 'the first call recorded' });
  const lock = await lockLease();
  let released = false;
  try {
    // the stream first: its open row blocks on the lock; its first write (message_start…) still reaches the client
    const stream = client.messages.stream(params('one two three four five six seven eight [sim:slow]', 256));
    const seen: string[] = [];
    stream.on('streamEvent', (e) => seen.push(e.type));
    await waitFor(() => (seen.includes('message_start') ? true : undefined), { timeoutMs: 10_000, what: "the stream's first write" });
    await waitFor(async () => ((await blockedOpens()) >= 1 ? true : undefined), { timeoutMs: 5_000, what: 'the open row blocked on the lease lock' });

    // a whole answer while no row can be written: it is answered all the same (the old design waited here)
    const whole = await client.messages.create(params('answered before my row'));
    expect(whole.content).toEqual([{ type: 'text', text: 'Hello! You said: answered before my row' }]);
    expect(await rows()).toBe(1);

    // the stream's later writes wait for its row: the sim sends a delta every 20 ms, none reaches the client while
    // the row is unwritten (bounded: the whole answer's round trip above, then up to 25 delta intervals)
    await expect(
      waitFor(() => (seen.includes('content_block_delta') ? true : undefined), { timeoutMs: 500, intervalMs: 20, what: 'a delta' }),
    ).rejects.toThrow();
    expect(seen).not.toContain('content_block_delta');

    await lock.release();
    released = true;
    // the row is written: the deltas flow (then the client leaves: a [sim:slow] stream is long)
    await waitFor(() => (seen.includes('content_block_delta') ? true : undefined), { timeoutMs: 10_000, what: 'a delta once the row is written' });
    stream.abort();
    await stream.done().catch(() => undefined);

    // both calls recorded, each captured exactly once: the whole answer its usage, the stream what it relayed
    const calls = await waitFor(
      async () => {
        const c = await chatCalls(h, accountId);
        return c.length === 3 ? c : undefined;
      },
      { timeoutMs: 10_000, what: 'the three calls recorded' },
    );
    // ordered by start: the stream, then the whole answer
    const [streamed, answered] = [calls[1]!, calls[2]!];
    expect(answered.status).toBe('completed');
    expect((await chargeOf(h, answered.id as string)).capture).toBe(
      await expectedCost(h, 'lumen-chat-1', { input: whole.usage.input_tokens, output: whole.usage.output_tokens }),
    );
    expect(streamed.result).toMatchObject({ charge_rule: 'relayed_output', reason: 'client_closed' });
    const cut = await chargeOf(h, streamed.id as string);
    expect(cut.capture).toBeGreaterThan(0n);
    expect(cut.capture).toBeLessThanOrEqual(cut.reserved);
    const captures = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE task_id = ANY($1) AND kind = 'capture'`, [
      [streamed.id, answered.id],
    ]);
    expect(captures[0].n).toBe(2);
  } finally {
    if (!released) await lock.release();
  }
}, 30_000);
