import request from 'supertest';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/** Issue 5 acceptance through the real app (createApp, real Postgres and Redis), over HTTP only. */
describe('money and keys through HTTP alone', () => {
  let h: EdgeHarness;
  const IMAGES = '/v1/images/generations';
  const flex = { model: 'lumen-2-flex', prompt: 'a lighthouse at dusk' };
  const api = () => request(h.baseUrl);
  const admin = () => ({ Authorization: `Bearer ${h.config.adminToken}` });

  beforeAll(async () => {
    h = await startEdgeHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('account with balance 1 and a lumen-2-flex key: submits until 402, tops up, submits again, finds every task with its cost', async () => {
    const prices = await api()
      .put('/api/prices')
      .set(admin())
      .send([
        { key: 'lumen-2-flex@2MP', price: 0.3, description: 'acceptance' },
        { key: 'lumen-2-flex', price: 0.3, description: 'acceptance' },
      ]);
    expect(prices.status).toBe(200);
    const account = await api().post('/api/accounts').set(admin()).send({ name: 'acceptance', balance: 1 });
    expect(account.status).toBe(201);
    const made = await api()
      .post('/api/keys')
      .set(admin())
      .send({ account_id: account.body.data.id, models: ['lumen-2-flex'] });
    const key = { Authorization: `Bearer ${made.body.data.key as string}` };

    const submitUntil402 = async (): Promise<string[]> => {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const r = await api().post(IMAGES).set(key).send(flex);
        if (r.status === 402) {
          expect(r.body.error.type).toBe('payment_required');
          return ids;
        }
        expect(r.status).toBe(200);
        ids.push(r.body.data[0].task_id as string);
      }
      throw new Error('never reached 402');
    };
    const before = await submitUntil402();
    expect(before).toHaveLength(3);
    expect((await api().post(IMAGES).set(key).send({ model: 'lumen-2-pro', prompt: 'x' })).status).toBe(403);

    const topped = await api().post(`/api/accounts/${account.body.data.id}/topups`).set(admin()).send({ amount: 1 });
    expect(topped.body.data).toMatchObject({ available: 1.1, held: 0.9 });
    const after = await submitUntil402();
    expect(after).toHaveLength(3);

    const balance = await api().get('/api/balance').set(key);
    expect(balance.body.data).toMatchObject({ balance: 2, held: 1.8, spent: 0 });
    expect(balance.body.data.available).toBeCloseTo(0.2, 6);
    const logs = await api().get('/api/logs?limit=100').set(key);
    const tasks = logs.body.data.items.filter((i: { type: string }) => i.type === 'task');
    expect(tasks.map((t: { task_id: string }) => t.task_id).sort()).toEqual([...before, ...after].sort());
    for (const t of tasks) expect(t).toMatchObject({ model: 'lumen-2-flex', cost: 0.3, entries: [{ kind: 'hold', amount: 0.3 }] });
    expect(logs.body.data.items.filter((i: { type: string }) => i.type === 'topup').map((i: { amount: number }) => i.amount)).toEqual([1, 1]);
  });

  it('50 concurrent submissions with one Idempotency-Key create one task and one hold', async () => {
    // a group without rate limits: the burst tests Idempotency-Key, not the default fair-use limits
    const c = await h.newCustomer({ balance: 5, groupName: 'burst-unlimited' });
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        api()
          .post(IMAGES)
          .set({ Authorization: `Bearer ${c.key}` })
          .set('Idempotency-Key', 'burst-1')
          .send(flex),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    expect(results.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(new Set(ok.map((r) => r.text)).size).toBe(1);
    const [{ n }] = await h.db.dataSource.query(`SELECT count(*)::int AS n FROM tasks WHERE account_id = $1`, [c.accountId]);
    const [{ m }] = await h.db.dataSource.query(`SELECT count(*)::int AS m FROM ledger_entries WHERE account_id = $1 AND kind = 'hold'`, [c.accountId]);
    expect([n, m]).toEqual([1, 1]);
    const replay = await api()
      .post(IMAGES)
      .set({ Authorization: `Bearer ${c.key}` })
      .set('Idempotency-Key', 'burst-1')
      .send(flex);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(ok[0].text);
  });
});
