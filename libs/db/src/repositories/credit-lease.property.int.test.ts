import fc from 'fast-check';
import { createTestDatabase, testChatCall, waitFor, type TestDatabase } from '@gmg/testing';
import { newTaskId } from '../ids';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { CreditLeaseRepository, type LeasedCall } from './credit-lease.repository';
import type { Row } from './sql';

/**
 * Credit leases under random interleavings of two edges: grants racing for one balance, batches recorded (and
 * re-sent) while sweepers close the same lease — through the previous release's `gmg_record_chat_calls` or the
 * edge's one statement per lease `gmg_write_chat_calls` (records alone, or with the same calls' open rows: both
 * functions live in the database while a deploy rolls), edges that die (their leases expire and are swept). After every
 * run, against Postgres: never below zero; `available + held + spent = topups`; every call captured at most once
 * and only while its lease was active; per closed lease `hold = Σ captures + release`; once every lease is
 * closed nothing stays held.
 */
let db: TestDatabase;
let leases: CreditLeaseRepository;
beforeAll(async () => {
  db = await createTestDatabase();
  leases = new CreditLeaseRepository(db.dataSource);
});
afterAll(async () => {
  await db?.drop();
});

type Step =
  | { t: 'grant'; edge: number; min: number; want: number }
  | { t: 'spend'; edge: number; costs: number[]; resend: boolean; closeDuring: boolean; via: 'record' | 'write' | 'write-opened' }
  | { t: 'die'; edge: number }
  | { t: 'sweep' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ t: fc.constant('grant' as const), edge: fc.nat(1), min: fc.integer({ min: 1, max: 300 }), want: fc.integer({ min: 1, max: 900 }) }),
  fc.record({
    t: fc.constant('spend' as const),
    edge: fc.nat(1),
    costs: fc.array(fc.nat(120), { minLength: 1, maxLength: 4 }),
    resend: fc.boolean(),
    closeDuring: fc.boolean(),
    via: fc.constantFrom('record' as const, 'write' as const, 'write-opened' as const),
  }),
  fc.record({ t: fc.constant('die' as const), edge: fc.nat(1) }),
  fc.constant({ t: 'sweep' as const }),
);

interface EdgeLease {
  id: string;
  remaining: bigint;
}

async function run(topup: number, steps: Step[]): Promise<void> {
  const accounts = new AccountRepository(db.dataSource);
  const account = await accounts.create({ name: 'lease-prop' });
  if (topup > 0) await accounts.topup(account.id, BigInt(topup), {});
  const { key } = await new ApiKeyRepository(db.dataSource).create({ accountId: account.id, name: 'k', models: null });
  const edges: Array<EdgeLease | undefined> = [undefined, undefined];
  const all: string[] = [];
  const call = (cost: number, reserved: bigint): LeasedCall => ({ ...testChatCall({ accountId: account.id, apiKeyId: key.id }, BigInt(cost)), reserved });
  for (const s of steps) {
    if (s.t === 'grant') {
      const id = `lease_${newTaskId().slice(5)}`;
      const g = await leases.grant({
        id,
        accountId: account.id,
        edgeId: `edge-${s.edge}`,
        min: BigInt(s.min),
        want: BigInt(Math.max(s.min, s.want)),
        ttlMs: 60_000,
      });
      if (g) {
        expect(g.amount >= BigInt(s.min)).toBe(true);
        all.push(id);
        const old = edges[s.edge];
        edges[s.edge] = { id, remaining: g.amount };
        if (old) await leases.close(old.id);
      }
    } else if (s.t === 'spend') {
      const l = edges[s.edge];
      if (!l) continue;
      // the edge's book: a call reserves at most what the lease has left, and costs at most what it reserved
      const calls: LeasedCall[] = [];
      for (const c of s.costs) {
        const reserved = BigInt(c) + 10n;
        if (reserved > l.remaining) break;
        l.remaining -= BigInt(c);
        calls.push(call(c, reserved));
      }
      const send = () => (s.via === 'record' ? leases.record(l.id, calls) : leases.write(l.id, s.via === 'write-opened' ? calls : [], calls));
      const sends = [send(), ...(s.resend ? [send()] : []), ...(s.closeDuring ? [leases.close(l.id)] : [])];
      await Promise.all(sends);
      if (s.closeDuring) edges[s.edge] = undefined;
    } else if (s.t === 'die') {
      const l = edges[s.edge];
      if (!l) continue;
      await db.dataSource.query(`UPDATE credit_leases SET expires_at = now() - interval '1 second' WHERE id = $1`, [l.id]);
      edges[s.edge] = undefined;
    } else {
      // two sweepers at once
      await Promise.all([0, 1].map(async () => Promise.all((await leases.findExpired()).map((id) => leases.close(id)))));
    }
    await check(account.id, BigInt(topup), all);
  }
  for (const l of edges) if (l) await leases.close(l.id);
  await Promise.all((await leases.findExpired()).map((id) => leases.close(id)));
  await check(account.id, BigInt(topup), all);
  const [acc]: Row[] = await db.dataSource.query(`SELECT held::text FROM accounts WHERE id = $1`, [account.id]);
  expect(acc.held).toBe('0');
}

async function check(accountId: string, topup: bigint, leaseIds: string[]): Promise<void> {
  const [a]: Row[] = await db.dataSource.query(`SELECT available::text, held::text, spent::text FROM accounts WHERE id = $1`, [accountId]);
  const [available, held, spent] = [BigInt(a.available as string), BigInt(a.held as string), BigInt(a.spent as string)];
  expect(available >= 0n && held >= 0n).toBe(true);
  expect(available + held + spent).toBe(topup);
  const caps: Row[] = await db.dataSource.query(
    `SELECT l.task_id, l.amount::text, l.meta->>'lease' AS lease FROM ledger_entries l WHERE l.account_id = $1 AND l.kind = 'capture'`,
    [accountId],
  );
  expect(new Set(caps.map((c) => c.task_id)).size).toBe(caps.length);
  expect(caps.reduce((s, c) => s + BigInt(c.amount as string), 0n)).toBe(spent);
  const rows: Row[] = await db.dataSource.query(
    `SELECT id, status, amount::text, used::text,
            (SELECT amount::text FROM ledger_entries WHERE task_id = c.id AND kind = 'hold') AS hold,
            (SELECT amount::text FROM ledger_entries WHERE task_id = c.id AND kind = 'release') AS rel
       FROM credit_leases c WHERE account_id = $1`,
    [accountId],
  );
  expect(rows.map((r) => r.id).sort()).toEqual([...leaseIds].sort());
  for (const r of rows) {
    const captured = caps.filter((c) => c.lease === r.id).reduce((s, c) => s + BigInt(c.amount as string), 0n);
    expect(BigInt(r.used as string)).toBe(captured);
    expect(r.hold).toBe(r.amount);
    if (r.status === 'closed') expect(BigInt(r.rel as string) + captured).toBe(BigInt(r.amount as string));
    else expect(r.rel).toBeNull();
  }
}

describe('credit leases (model-based, real Postgres)', () => {
  it('keep every money invariant under racing grants, re-sent batches, closes during a batch and dead edges (150 runs)', async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: 1500 }), fc.array(stepArb, { minLength: 1, maxLength: 10 }), run), { numRuns: 150 });
  }, 300_000);

  it("returns a dead edge's unspent lease: expired, swept, the rest back to available", async () => {
    const accounts = new AccountRepository(db.dataSource);
    const account = await accounts.create({ name: 'dead-edge' });
    await accounts.topup(account.id, 1000n, {});
    const g = await leases.grant({ id: 'lease_dead0001', accountId: account.id, edgeId: 'edge-dead', min: 100n, want: 700n, ttlMs: 1 });
    expect(g?.amount).toBe(700n);
    await waitFor(async () => (await leases.findExpired()).includes('lease_dead0001'), { timeoutMs: 5000, what: 'the lease expired' });
    const [a, b] = await Promise.all([leases.close('lease_dead0001'), leases.close('lease_dead0001')]);
    expect([a, b].filter((x) => x !== null)).toEqual([700n]);
    expect(await new AccountRepository(db.dataSource).get(account.id)).toMatchObject({ available: 1000n, held: 0n });
  });
});
