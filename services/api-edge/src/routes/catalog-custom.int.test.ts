import request from 'supertest';
import { toMinor } from '@gmg/contracts';
import { ChannelRepository, GroupRepository, PriceRepository } from '@gmg/db';
import { startEdgeHarness, type EdgeHarness } from '../edge.test-kit';

/**
 * A custom model name (on a key's list, no registry entry) through the real edge: the catalog lists every endpoint
 * it is callable on, and its schema routes answer its passthrough (base) contract.
 */
const CUSTOM = 'house-gen-1';
const CHAT = 'house-chat-1';
let h: EdgeHarness;
beforeAll(async () => {
  h = await startEdgeHarness({ env: { MESSAGES_CHANNEL_CACHE_TTL_MS: '0' } });
  await new PriceRepository(h.db.dataSource).upsertMany([{ key: CUSTOM, unitPrice: toMinor(0.01), description: 'custom test price' }]);
  const channels = new ChannelRepository(h.db.dataSource);
  // a catch-all messages channel does not serve custom names; one that lists the name does
  await channels.create({ name: 'catch-all', protocol: 'messages', baseUrl: 'http://127.0.0.1:9', apiKey: 'k', models: null, groups: null, priority: 0 });
  await channels.create({ name: 'house', protocol: 'messages', baseUrl: 'http://127.0.0.1:9', apiKey: 'k', models: [CHAT], groups: null, priority: 0 });
});
afterAll(() => h?.close());

const get = (key: string, path: string) => request(h.baseUrl).get(path).set('Authorization', `Bearer ${key}`);
const itemOf = async (key: string, name: string, query = '') =>
  ((await get(key, `/v1/models${query}`)).body.data as Array<Record<string, unknown>>).find((i) => i.id === name);

describe('a custom model name in the catalog', () => {
  it('lists the image and video endpoints, on which it is callable; not messages without a channel naming it', async () => {
    const c = await h.newCustomer({ balance: 5, models: [CUSTOM, 'lumen-2-pro'] });
    expect(await itemOf(c.key, CUSTOM)).toEqual({
      id: CUSTOM,
      object: 'model',
      created: 0,
      owned_by: 'custom',
      supported_endpoint_types: ['image-generation', 'video-generation'],
    });
    for (const path of ['/v1/images/generations', '/v1/videos/generations']) {
      const r = await request(h.baseUrl).post(path).set('Authorization', `Bearer ${c.key}`).send({ model: CUSTOM, prompt: 'a kite', seed: 7 });
      expect([path, r.status]).toEqual([path, 200]);
    }
  });

  it('lists messages and chat-completions too when a messages channel names it', async () => {
    const c = await h.newCustomer({ balance: 5, models: [CHAT, CUSTOM] });
    expect((await itemOf(c.key, CHAT))!.supported_endpoint_types).toEqual(['image-generation', 'video-generation', 'messages', 'chat-completions']);
    expect((await itemOf(c.key, CUSTOM))!.supported_endpoint_types).toEqual(['image-generation', 'video-generation']);
    expect((await get(c.key, `/v1/models/${CHAT}/schema`)).body.supported_endpoint_types).toEqual(expect.arrayContaining(['messages', 'chat-completions']));
  });

  it('has a schema route answering its passthrough contract on each endpoint, and its parameters with expand', async () => {
    const c = await h.newCustomer({ balance: 5, models: [CUSTOM] });
    const r = await get(c.key, `/v1/models/${CUSTOM}/schema`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      id: CUSTOM,
      owned_by: 'custom',
      category: 'unknown',
      supported_endpoint_types: ['image-generation', 'video-generation'],
      parameters: {
        operation: 'image_generation',
        method: 'POST',
        endpoint: '/v1/images/generations',
        source: 'base',
        input_schema: { type: 'object', additionalProperties: true, required: ['model', 'prompt'] },
        actions: {
          image_generation: { method: 'POST', endpoint: '/v1/images/generations', input_schema: { additionalProperties: true } },
          video_generation: { method: 'POST', endpoint: '/v1/videos/generations', input_schema: { properties: { video_urls: expect.any(Object) } } },
        },
      },
      idempotency: { header: 'Idempotency-Key' },
      response_contract: { ack: { shape: 'A', http_status: 200, task_id_path: 'data[0].task_id' }, poll: { path: '/v1/tasks/{task_id}' } },
    });
    expect(Object.keys(r.body.response_contract.task.result_fields)).toEqual(expect.arrayContaining(['data.result.images[].url', 'data.result.videos[].url']));
    expect((await get(c.key, `/v1/model-schema?model=${CUSTOM}`)).body).toEqual(r.body);
    expect((await itemOf(c.key, CUSTOM, '?expand=parameters'))!.parameters).toEqual(r.body.parameters);
  });

  it('answers 404 for a custom name the key does not list, or its group does not allow', async () => {
    const other = await h.newCustomer({ balance: 5, models: ['lumen-2-pro'] });
    expect((await get(other.key, `/v1/models/${CUSTOM}/schema`)).status).toBe(404);
    const unrestricted = await h.newCustomer({ balance: 5 });
    expect((await get(unrestricted.key, `/v1/models/${CUSTOM}/schema`)).status).toBe(404);
    await new GroupRepository(h.db.dataSource).upsert({ name: 'no-custom', priceRatio: 1, models: ['lumen-2-pro'], rpsLimit: null, inflightLimit: null });
    const barred = await h.newCustomer({ balance: 5, models: [CUSTOM, 'lumen-2-pro'], groupName: 'no-custom' });
    expect((await get(barred.key, `/v1/models/${CUSTOM}/schema`)).status).toBe(404);
    expect(await itemOf(barred.key, CUSTOM)).toBeUndefined();
  });
});
