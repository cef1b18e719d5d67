import Anthropic from '@anthropic-ai/sdk';
import request from 'supertest';
import { ApiKeyRepository, GroupRepository } from '@gmg/db';
import { waitFor } from '@gmg/testing';
import { addMessagesChannel, balanceOf, chatCalls, sdkFor, startEdgeHarness, startSim, type EdgeHarness, type SimHandle } from '../chat/chat.test-kit';

/**
 * A key's spending cap on chat calls (docs/messages.md, "Keys with a spending cap"): a call's most is counted into the
 * key's spend before it starts — refused with 402 naming `max_spend` when it would pass the cap, before any money
 * moves — and what it did not use is given back when it ends, so the key's spend is what its calls were charged.
 * `lumen-chat-1` answers at once (a sim) for the `default` group, and never (a sim that hangs) for the `hang` group,
 * so the calls of a key in that group stay counted while they run.
 */
type Row = Record<string, unknown>;
let h: EdgeHarness;
let sims: SimHandle[];
let accountId: string;

const ask = { max_tokens: 64, messages: [{ role: 'user' as const, content: 'hi' }] };

async function keyCappedAt(maxSpend: bigint, groupName: string | null = null): Promise<{ id: string; secret: string }> {
  const { key, secret } = await new ApiKeyRepository(h.db.dataSource).create({ accountId, name: 'capped', groupName, cap: { maxSpend, window: null } });
  return { id: key.id, secret };
}

async function spentOf(keyId: string): Promise<bigint> {
  const rows: Row[] = await h.db.dataSource.query(`SELECT spent::text AS spent FROM api_key_spend WHERE api_key_id = $1 AND period = 'life'`, [keyId]);
  return rows[0] ? BigInt(rows[0].spent as string) : 0n;
}

/** What the ledger captured for the key's chat calls (read from the ledger, not from the code under test). */
async function capturedFor(keyId: string): Promise<bigint> {
  const [r]: Row[] = await h.db.dataSource.query(
    `SELECT COALESCE(sum(l.amount), 0)::text AS s FROM ledger_entries l JOIN tasks t ON t.id = l.task_id WHERE t.api_key_id = $1 AND l.kind = 'capture'`,
    [keyId],
  );
  return BigInt(r.s as string);
}

/** The key's calls that have ended (recorded with their charge). */
async function endedCalls(keyId: string): Promise<number> {
  const [r]: Row[] = await h.db.dataSource.query(
    `SELECT count(*)::int AS n FROM tasks WHERE api_key_id = $1 AND pool = 'chat' AND status NOT IN ('pending','processing')`,
    [keyId],
  );
  return r.n as number;
}

/** The most one `ask` can cost (its hold), whole and streamed. */
let hold: bigint;
let streamedHold: bigint;

beforeAll(async () => {
  let fast: SimHandle, hang: SimHandle;
  [h, fast, hang] = await Promise.all([startEdgeHarness({ env: { MESSAGES_CHANNEL_CACHE_TTL_MS: '0' } }), startSim(), startSim('hang')]);
  sims = [fast, hang];
  await new GroupRepository(h.db.dataSource).upsert({ name: 'hang', priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
  await addMessagesChannel(h, 'fast', fast, ['lumen-chat-1'], 0, ['default']);
  await addMessagesChannel(h, 'hang', hang, ['lumen-chat-1'], 0, ['hang']);
  const customer = await h.newCustomer({ balance: 50 });
  accountId = customer.accountId;
  // each hold read from a call of an uncapped key: its row's price is the most the call could cost
  const client = sdkFor(h, customer.key);
  await client.messages.create({ model: 'lumen-chat-1', ...ask });
  for await (const event of await client.messages.create({ model: 'lumen-chat-1', ...ask, stream: true })) void event;
  const rows = await waitFor(async () => ((await chatCalls(h, accountId)).length === 2 ? chatCalls(h, accountId) : undefined), {
    timeoutMs: 5000,
    what: 'the two uncapped calls recorded',
  });
  [hold, streamedHold] = rows.map((r) => BigInt(r.price as string)) as [bigint, bigint];
  expect(hold > 0n && streamedHold > 0n).toBe(true);
}, 60_000);

afterAll(async () => {
  await h.background.creditLeases.close();
  await Promise.all(sims.map((s) => s.proc.stop()));
  await h.close();
});

it('a call whose most would pass the cap is refused with 402 naming max_spend on both endpoints, before any money moves', async () => {
  const key = await keyCappedAt(hold - 1n);
  const before = await balanceOf(h, accountId);
  const calls = (await chatCalls(h, accountId)).length;

  const viaMessages = await sdkFor(h, key.secret)
    .messages.create({ model: 'lumen-chat-1', ...ask })
    .then(
      () => null,
      (e: unknown) => e,
    );
  expect(viaMessages).toBeInstanceOf(Anthropic.APIError);
  expect((viaMessages as InstanceType<typeof Anthropic.APIError>).status).toBe(402);
  expect((viaMessages as InstanceType<typeof Anthropic.APIError>).message).toContain('max_spend');

  const viaCompletions = await request(h.baseUrl)
    .post('/v1/chat/completions')
    .set('Authorization', `Bearer ${key.secret}`)
    .send({ model: 'lumen-chat-1', ...ask });
  expect(viaCompletions.status).toBe(402);
  expect(JSON.stringify(viaCompletions.body)).toContain('max_spend');

  expect(await spentOf(key.id)).toBe(0n);
  expect((await chatCalls(h, accountId)).length).toBe(calls);
  expect(await balanceOf(h, accountId)).toEqual(before);
});

it('a key counts what its calls were charged: each call counted at its most while it runs, the rest given back', async () => {
  const key = await keyCappedAt(100n * hold);
  const client = sdkFor(h, key.secret);
  for (let i = 0; i < 3; i++) await client.messages.create({ model: 'lumen-chat-1', ...ask });
  const { captured } = await waitFor(async () => ((await endedCalls(key.id)) === 3 ? { captured: await capturedFor(key.id) } : undefined), {
    timeoutMs: 5000,
    what: 'the three calls recorded',
  });
  await waitFor(async () => ((await spentOf(key.id)) === captured ? true : undefined), { timeoutMs: 5000, what: 'the key spend equal to its captures' });
  expect(captured < 3n * hold).toBe(true); // the calls used less than their most: something was given back
});

it('concurrent calls never pass the cap together: with room for 3 running calls, 3 of 12 run and 9 are refused', async () => {
  const key = await keyCappedAt(3n * streamedHold + streamedHold / 2n, 'hang');
  const aborts = Array.from({ length: 12 }, () => new AbortController());
  const ended: unknown[] = [];
  // plain fetch (no client-side connection limit): twelve calls in flight at once
  const outcomes = aborts.map((a) =>
    fetch(`${h.baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key.secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'lumen-chat-1', ...ask, stream: true }),
      signal: a.signal,
    })
      .then(
        (r) => r.status,
        () => 'aborted',
      )
      .then((o) => (ended.push(o), o)),
  );
  // the refusals come back at once; the three that fit stay with the vendor that never answers
  await waitFor(async () => (ended.length === 9 ? true : undefined), { timeoutMs: 10_000, what: 'nine calls refused' });
  expect(ended).toEqual(Array(9).fill(402));
  expect(await spentOf(key.id)).toBe(3n * streamedHold);

  aborts.forEach((a) => a.abort());
  expect((await Promise.all(outcomes)).filter((o) => o === 'aborted')).toHaveLength(3);
  // the three end with their clients (nothing came from the vendor): failed, nothing charged, and the key counts what
  // the ledger captured for them — everything given back
  const { captured } = await waitFor(async () => ((await endedCalls(key.id)) === 3 ? { captured: await capturedFor(key.id) } : undefined), {
    timeoutMs: 10_000,
    what: 'the three calls recorded',
  });
  await waitFor(async () => ((await spentOf(key.id)) === captured ? true : undefined), { timeoutMs: 5000, what: 'the key spend equal to its captures' });
  expect(captured).toBe(0n);
});
