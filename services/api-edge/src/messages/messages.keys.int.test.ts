import { ChannelRepository } from '@gmg/db';
import { waitFor } from '@gmg/testing';
import { SIM_KEY, sdkFor, startEdgeHarness, startSim, type EdgeHarness, type SimHandle } from '../chat/chat.test-kit';

/**
 * A chat channel of several keys (issue 37): each call takes a usable key by weight; a key the vendor refuses moves
 * the call to another key of the same channel (the client sees one clean answer) and is set aside for every replica
 * with the vendor's message, so later calls never try it.
 */
const WRONG = 'sk-revoked-chat-key-00000000';
let h: EdgeHarness;
let sim: SimHandle;
let key: string;
let channelId: string;

beforeAll(async () => {
  [h, sim] = await Promise.all([startEdgeHarness({ env: { MESSAGES_CHANNEL_CACHE_TTL_MS: '0' } }), startSim()]);
  // the refused key weighs 100 times the good one: the first call all but surely tries it first
  channelId = (
    await new ChannelRepository(h.db.dataSource).create({
      name: 'chat-keys',
      protocol: 'messages',
      baseUrl: sim.url,
      models: ['lumen-chat-1'],
      apiKeys: [
        { secret: WRONG, weight: 100 },
        { secret: SIM_KEY, weight: 1 },
      ],
    })
  ).id;
  ({ key } = await h.newCustomer({ balance: 50 }));
}, 60_000);
afterAll(async () => {
  await h?.background.creditLeases.close();
  await sim?.proc.stop();
  await h?.close();
});

const refusals = () => sim.logLines().filter((l) => l.msg === 'messages call refused' && l.status === 401);
const keyRow = async () =>
  (await h.db.dataSource.query(`SELECT status, disabled_reason FROM channel_keys WHERE channel_id = $1 AND secret = $2`, [channelId, WRONG]))[0] as {
    status: string;
    disabled_reason: string | null;
  };

it('a refused key: the call is answered through another key of the channel, and the key is disabled with the vendor message', async () => {
  const client = sdkFor(h, key);
  const first = await client.messages.create({ model: 'lumen-chat-1', max_tokens: 16, messages: [{ role: 'user', content: 'one' }] });
  expect(first.content).toEqual([{ type: 'text', text: 'Hello! You said: one' }]);
  const row = await waitFor(async () => ((await keyRow()).status === 'disabled' ? keyRow() : undefined), { timeoutMs: 3000, what: 'the key set aside' });
  expect(row.disabled_reason).toContain('invalid x-api-key');
  // the sim's log reaches this process asynchronously: wait for the refusal the first call met
  await waitFor(() => refusals().length > 0 || undefined, { timeoutMs: 3000, what: 'the 401 in the sim log' });
  const refusedSoFar = refusals().length;
  for (const text of ['two', 'three', 'four']) {
    const m = await client.messages.create({ model: 'lumen-chat-1', max_tokens: 16, messages: [{ role: 'user', content: text }] });
    expect(m.content).toEqual([{ type: 'text', text: `Hello! You said: ${text}` }]);
  }
  // set aside: no later call tried it (once the sim's log shows the four answers, it shows any refusal before them)
  await waitFor(() => sim.logLines().filter((l) => l.msg === 'messages call answered').length >= 4 || undefined, {
    timeoutMs: 3000,
    what: 'four answers in the sim log',
  });
  expect(refusals().length).toBe(refusedSoFar);
});
