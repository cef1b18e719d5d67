import { customModelSchemaDocument, isModelAllowed, listCatalog, modelSchemaDocument } from './catalog';

const ids = (items: { id: string }[]) => items.map((i) => i.id);

describe('listCatalog', () => {
  it('without restrictions lists every model and alias with basic fields only', () => {
    const items = listCatalog({ keyModels: null, groupModels: null });
    expect(ids(items)).toEqual(
      expect.arrayContaining([
        'lumen-2-pro',
        'pict-image-2',
        'pict-image-2-ext',
        'spark-imagine-1.5-ext',
        'spark-imagine-1.5-video-ext',
        'artgen',
        'motion-2.0',
      ]),
    );
    for (const i of items) {
      expect(Object.keys(i).sort()).toEqual(['created', 'id', 'object', 'owned_by', 'supported_endpoint_types']);
      expect(i.object).toBe('model');
    }
  });

  it('scope is the intersection of key and group lists and is the same with or without expand', () => {
    const opts = { keyModels: ['lumen-2-pro', 'pixel-v6', 'lumen-chat-1'], groupModels: ['lumen-2-pro', 'pixel-v6', 'clipq3-pro'] };
    const legacy = ids(listCatalog(opts));
    expect(legacy.sort()).toEqual(['lumen-2-pro', 'pixel-v6']);
    expect(ids(listCatalog({ ...opts, expand: 'category' })).sort()).toEqual(legacy);
    expect(ids(listCatalog({ ...opts, expand: 'parameters' })).sort()).toEqual(legacy);
  });

  it('lists key-list names without a registry entry as category unknown, still callable', () => {
    const items = listCatalog({ keyModels: ['my-custom-model', 'lumen-2-pro'], groupModels: null, expand: 'category' });
    expect(items.find((i) => i.id === 'my-custom-model')).toMatchObject({ category: 'unknown' });
    expect(items.find((i) => i.id === 'my-custom-model')!.capability_tags).toBeUndefined();
    expect(isModelAllowed('my-custom-model', ['my-custom-model'], null)).toBe(true);
  });

  it('lists every chat model on both chat protocols (messages and chat-completions), no other model on either', () => {
    const items = listCatalog({ keyModels: null, groupModels: null, expand: 'category' });
    const chat = items.filter((i) => i.category === 'chat');
    expect(ids(chat).sort()).toEqual(['lumen-chat-1', 'lumen-chat-1-mini', 'lumen-omni-1']);
    for (const i of chat) expect(i.supported_endpoint_types).toEqual(['messages', 'chat-completions']);
    for (const i of items.filter((x) => x.category !== 'chat')) expect(i.supported_endpoint_types).not.toContain('chat-completions');
  });

  it('lists for a custom name the endpoints it is callable on, and messages and chat-completions only when a channel names it', () => {
    const items = listCatalog({ keyModels: ['house-gen', 'house-chat'], groupModels: null, customChatModels: new Set(['house-chat']) });
    expect(items.find((i) => i.id === 'house-gen')!.supported_endpoint_types).toEqual(['image-generation', 'video-generation']);
    expect(items.find((i) => i.id === 'house-chat')!.supported_endpoint_types).toEqual([
      'image-generation',
      'video-generation',
      'messages',
      'chat-completions',
    ]);
  });

  it('gives a custom name its passthrough contract per endpoint with expand=parameters, as its schema document does', () => {
    const item = listCatalog({ keyModels: ['house-gen'], groupModels: null, expand: 'parameters' })[0];
    expect(item.parameters).toMatchObject({ source: 'base', endpoint: '/v1/images/generations' });
    expect(Object.keys(item.parameters!.actions!)).toEqual(['image_generation', 'video_generation']);
    expect(customModelSchemaDocument('house-gen')!.parameters).toEqual(item.parameters);
    expect(customModelSchemaDocument('lumen-2-pro')).toBeUndefined();
  });

  it('treats aliases as interchangeable in restriction lists', () => {
    expect(isModelAllowed('pict-image-2-ext', ['pict-image-2'], null)).toBe(true);
    expect(isModelAllowed('pict-image-2', null, ['pict-image-2-ext'])).toBe(true);
    expect(isModelAllowed('lumen-2-max', ['lumen-2-pro'], null)).toBe(false);
    expect(ids(listCatalog({ keyModels: ['pict-image-2'], groupModels: null })).sort()).toEqual(['pict-image-2', 'pict-image-2-ext']);
  });

  it('expand=category adds category and capability tags', () => {
    const items = listCatalog({ keyModels: ['pixel-v6', 'lumen-chat-1'], groupModels: null, expand: 'category' });
    expect(items.find((i) => i.id === 'pixel-v6')).toMatchObject({ category: 'video', capability_tags: expect.arrayContaining(['Text to Video']) });
    expect(items.find((i) => i.id === 'lumen-chat-1')).toMatchObject({ category: 'chat', capability_tags: expect.arrayContaining(['Text']) });
    expect(items.every((i) => i.parameters === undefined)).toBe(true);
  });

  it('expand=parameters adds parameters for image and video models only', () => {
    const items = listCatalog({ keyModels: null, groupModels: null, expand: 'parameters' });
    const pro = items.find((i) => i.id === 'lumen-2-pro')!;
    expect(pro.parameters).toMatchObject({ operation: 'image_generation', method: 'POST', endpoint: '/v1/images/generations', source: 'model:lumen-2' });
    expect(pro.parameters!.schema_version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(pro.parameters!.input_schema).toMatchObject({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', additionalProperties: true });
    expect(items.find((i) => i.id === 'lumen-chat-1')!.parameters).toBeUndefined();
  });

  it('the art suite schema document has its acknowledgement and poll contract', () => {
    const doc = modelSchemaDocument('artgen') as { response_contract: { ack: Record<string, unknown>; poll: Record<string, unknown> } };
    expect(doc.response_contract.ack).toMatchObject({ shape: 'artgen', http_status: 200, task_id_path: 'data.task_id' });
    expect(doc.response_contract.poll).toMatchObject({ path: '/v1/tasks/{task_id}', estimated_seconds: 60 });
  });

  it('expand=parameters lists the art suite with the schema of every action', () => {
    const items = listCatalog({ keyModels: null, groupModels: null, expand: 'parameters' });
    const artgen = items.find((i) => i.id === 'artgen')!.parameters!;
    expect(artgen.endpoint).toBe('/v1/artgen/generations');
    expect(Object.keys(artgen.actions!)).toHaveLength(16);
    expect(artgen.actions!.pan).toMatchObject({ method: 'POST', endpoint: '/v1/artgen/generations/pan' });
    expect(artgen.actions!.pan.input_schema).toMatchObject({ required: ['task_id', 'direction'] });
    expect(artgen.actions!.blend.input_schema).toMatchObject({ properties: { prompt: false } });
  });

  it('category filters only together with a recognized expand', () => {
    const all = listCatalog({ keyModels: null, groupModels: null });
    expect(listCatalog({ keyModels: null, groupModels: null, category: 'video' })).toHaveLength(all.length);
    const videos = listCatalog({ keyModels: null, groupModels: null, expand: 'category', category: 'video' });
    expect(videos.length).toBeGreaterThan(5);
    expect(videos.every((i) => i.category === 'video')).toBe(true);
    const unknown = listCatalog({ keyModels: ['x-custom', 'pixel-v6'], groupModels: null, expand: 'parameters', category: 'unknown' });
    expect(ids(unknown)).toEqual(['x-custom']);
  });

  it('an unrecognized expand gives the legacy basic list', () => {
    const items = listCatalog({ keyModels: null, groupModels: null, expand: 'everything', category: 'video' });
    expect(items).toEqual(listCatalog({ keyModels: null, groupModels: null }));
  });
});

describe('modelSchemaDocument', () => {
  it('gives parameters plus idempotency and response-contract blocks, also for an alias', () => {
    const doc = modelSchemaDocument('spark-imagine-1.5-video-ext')!;
    expect(doc.id).toBe('spark-imagine-1.5-video-ext');
    expect(doc.parameters!.operation).toBe('video_generation');
    expect(doc.idempotency).toMatchObject({ header: 'Idempotency-Key', scope: 'api_key', retention_seconds: 86400 });
    expect(doc.response_contract).toMatchObject({ ack: { shape: 'A', http_status: 200 }, poll: { path: '/v1/tasks/{task_id}' } });
  });

  it('describes shape B for spark-imagine-image-2.0 and the pixel-v6 poll cadence', () => {
    expect(modelSchemaDocument('spark-imagine-image-2.0')!.response_contract).toMatchObject({ ack: { shape: 'B', http_status: 202 } });
    expect(modelSchemaDocument('pixel-v6')!.response_contract).toMatchObject({ poll: { interval_seconds: { min: 5, max: 5 } } });
    expect(modelSchemaDocument('Omni-Flash-Ext')!.response_contract).toMatchObject({ poll: { interval_seconds: { min: 5, max: 10 } } });
  });

  it('is undefined for unknown names and has no parameters for chat', () => {
    expect(modelSchemaDocument('nope')).toBeUndefined();
    expect(modelSchemaDocument('lumen-chat-1')).toMatchObject({ category: 'chat' });
    expect(modelSchemaDocument('lumen-chat-1')!.parameters).toBeUndefined();
  });
});
