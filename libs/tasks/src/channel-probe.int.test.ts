import type { DataSource } from 'typeorm';
import { ChannelHealthRepository, ChannelRepository, createDataSource } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { MessagesUpstreamClient, createAdapterRegistry, createGatewayAdapter } from '@gmg/upstream';
import { ChannelProbe } from './channel-probe';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.test-kit';

/**
 * The probe across the fleet (issue 37 item 2): two worker processes (two data sources, two probes) ticking at the
 * same moment make ONE trial call for a due key, and its outcome is what every replica then reads.
 */
const logger = createLogger({ service: 'test', level: 'silent' });
const KEYS = ['sk-probe-key-one-000000001', 'sk-probe-key-two-000000002'];
let db: TestDatabase;
let other: DataSource;
let up: FakeUpstream;
let messages: MessagesUpstreamClient;

beforeAll(async () => {
  db = await createTestDatabase();
  other = await createDataSource({ url: db.url, poolSize: 4 }).initialize();
  up = await startFakeUpstream({ apiKeys: KEYS });
  messages = new MessagesUpstreamClient();
}, 60_000);
afterAll(async () => {
  await messages?.close();
  await up?.close();
  await other?.destroy();
  await db?.drop();
});

const probeOn = (ds: DataSource) =>
  new ChannelProbe({
    health: new ChannelHealthRepository(ds, { baseMs: 1000, maxMs: 4000 }),
    channels: new ChannelRepository(ds),
    trial: { adapters: createAdapterRegistry([createGatewayAdapter({ timeoutMs: 5000 })]), messages },
    logger,
  });
const probeCalls = () => up.keysSeen.filter((s) => s.method === 'GET' && s.path.startsWith('/v1/tasks/gmg-probe-')).length;

it('two processes ticking at once make one trial; a still-refused key stays disabled, a healed one is active again for every replica', async () => {
  const ch = await new ChannelRepository(db.dataSource).create({ name: 'probed', baseUrl: up.baseUrl, apiKeys: KEYS.map((secret) => ({ secret })) });
  const target = ch.keys![0]!;
  await new ChannelHealthRepository(db.dataSource).keyRefused(target.id, 'revoked');
  up.revoke(KEYS[0]!, 'still revoked');
  const due = () => db.dataSource.query(`UPDATE channel_keys SET next_probe_at = now() - interval '1 second' WHERE id = $1`, [target.id]);
  const [a, b] = [probeOn(db.dataSource), probeOn(other)];

  await due();
  const refusedBefore = up.unauthorized;
  expect((await Promise.all([a.tick(), b.tick()])).reduce((x, y) => x + y)).toBe(1);
  expect(up.unauthorized - refusedBefore).toBe(1);
  expect((await new ChannelRepository(other).get(ch.id))!.keys![0]).toMatchObject({
    status: 'disabled',
    disabledReason: expect.stringContaining('still revoked'),
  });

  up.heal(KEYS[0]!);
  await due();
  const before = probeCalls();
  expect((await Promise.all([a.tick(), b.tick()])).reduce((x, y) => x + y)).toBe(1);
  expect(probeCalls() - before).toBe(1);
  expect((await new ChannelRepository(other).get(ch.id))!.keys!.map((k) => k.status)).toEqual(['active', 'active']);
  // nothing is due any more
  expect(await a.tick()).toBe(0);
});
