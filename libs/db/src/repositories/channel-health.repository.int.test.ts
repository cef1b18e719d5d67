import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import type { DataSource } from 'typeorm';
import { createDataSource } from '../data-source';
import { ChannelHealthRepository } from './channel-health.repository';
import { ChannelKeyRepository } from './channel-key.repository';
import { ChannelRepository } from './channel.repository';

/**
 * Health in Postgres (issue 37 item 2): shared by every replica (two data sources here stand for two processes),
 * kept across a restart, one trial at a time fleet-wide, a growing back-off.
 */
let db: TestDatabase;
let other: DataSource;
const BACK_OFF = { baseMs: 1000, maxMs: 8000 };

beforeAll(async () => {
  db = await createTestDatabase();
  other = await createDataSource({ url: db.url, poolSize: 4 }).initialize();
}, 60_000);
afterAll(async () => {
  await other?.destroy();
  await db?.drop();
});

const newChannel = async (keys: string[]) =>
  new ChannelRepository(db.dataSource).create({
    name: `ch-${Math.random().toString(36).slice(2, 8)}`,
    baseUrl: 'http://127.0.0.1:9',
    apiKeys: keys.map((secret) => ({ secret })),
  });
const makeDue = (table: string, id: string) => db.dataSource.query(`UPDATE ${table} SET next_probe_at = now() - interval '1 second' WHERE id = $1`, [id]);

it('a refused key is disabled with the vendor message for every replica; answers show its hint, never the secret', async () => {
  const ch = await newChannel(['sk-live-aaaaaaaaaaaa1111', 'sk-live-bbbbbbbbbbbb2222']);
  const [a, b] = ch.keys!;
  await new ChannelHealthRepository(db.dataSource, BACK_OFF).keyRefused(a!.id, 'Incorrect API key provided');
  // another process reads the same truth
  const seen = (await new ChannelRepository(other).get(ch.id))!;
  expect(seen.keys!.map((k) => [k.id, k.status, k.disabledReason, k.hint])).toEqual([
    [a!.id, 'disabled', 'Incorrect API key provided', '…1111'],
    [b!.id, 'active', null, '…2222'],
  ]);
  expect(JSON.stringify(seen)).not.toContain('sk-live');
  const withSecret = (await new ChannelRepository(other).getWithSecret(ch.id))!;
  expect(withSecret.keys.map((k) => k.secret)).toEqual(['sk-live-aaaaaaaaaaaa1111', 'sk-live-bbbbbbbbbbbb2222']);
});

it('two processes racing for the same due trial: exactly one claims it; the other gets nothing until the lease ends', async () => {
  const ch = await newChannel(['sk-race-cccccccccccc3333']);
  const k = ch.keys![0]!;
  const one = new ChannelHealthRepository(db.dataSource, BACK_OFF);
  const two = new ChannelHealthRepository(other, BACK_OFF);
  await one.keyRefused(k.id, 'revoked');
  await makeDue('channel_keys', k.id);
  const claims = await Promise.all([...Array.from({ length: 5 }, () => one.claimDue(60_000)), ...Array.from({ length: 5 }, () => two.claimDue(60_000))]);
  expect(claims.filter((c) => c !== null)).toEqual([{ scope: 'key', id: k.id, channelId: ch.id }]);
  expect(await two.claimDue(60_000)).toBeNull();
});

it('failed trials push the next one out by a growing back-off (capped); a success makes it active and resets it', async () => {
  const ch = await newChannel(['sk-back-dddddddddddd4444']);
  const k = ch.keys![0]!;
  const h = new ChannelHealthRepository(db.dataSource, BACK_OFF);
  await h.keyRefused(k.id, 'revoked');
  const waits: number[] = [];
  for (let i = 0; i < 5; i++) {
    await makeDue('channel_keys', k.id);
    const claim = (await h.claimDue(60_000))!;
    await h.trialDone(claim, false, `still revoked ${i}`);
    const [r] = await db.dataSource.query(`SELECT extract(epoch FROM next_probe_at - now()) * 1000 AS ms, disabled_reason FROM channel_keys WHERE id = $1`, [
      k.id,
    ]);
    waits.push(Math.round(Number(r.ms) / 1000));
    expect(r.disabled_reason).toBe(`still revoked ${i}`);
  }
  expect(waits).toEqual([2, 4, 8, 8, 8]);
  await makeDue('channel_keys', k.id);
  await h.trialDone((await h.claimDue(60_000))!, true);
  const [row] = await db.dataSource.query(`SELECT status, cool_level, next_probe_at, disabled_reason FROM channel_keys WHERE id = $1`, [k.id]);
  expect(row).toEqual({ status: 'active', cool_level: 0, next_probe_at: null, disabled_reason: null });
});

it('a channel that keeps failing cools for every replica; only its trial brings it back; an operator-disabled key is never probed', async () => {
  const ch = await newChannel(['sk-chan-eeeeeeeeeeee5555', 'sk-chan-ffffffffffff6666']);
  const h = new ChannelHealthRepository(db.dataSource, BACK_OFF);
  await h.channelDown(ch.id, 'cooling', 'upstream answered HTTP 503');
  const seen = (await new ChannelRepository(other).get(ch.id))!;
  expect(seen.health).toMatchObject({ status: 'cooling', lastError: 'upstream answered HTTP 503' });
  expect(seen.health!.coolingUntil!.getTime()).toBeGreaterThan(Date.now());
  await new ChannelKeyRepository(db.dataSource).update(ch.id, ch.keys![1]!.id, { status: 'disabled', reason: 'rotating' });
  await makeDue('channels', ch.id);
  const claim = await new ChannelHealthRepository(other, BACK_OFF).claimDue(60_000);
  expect(claim).toEqual({ scope: 'channel', id: ch.id, channelId: ch.id });
  await h.trialDone(claim!, true);
  expect((await new ChannelRepository(db.dataSource).get(ch.id))!.health!.status).toBe('active');
  expect(await h.claimDue(60_000)).toBeNull();
});
