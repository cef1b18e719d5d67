import { baseContract } from './base-contract';
import { BODY_CAPS, DEFAULT_PROMPT_MAX_LENGTH } from './common-fields';
import { listModels } from './registry';
import type { JsonSchema, ModelContract } from './types';

/** Every contract of the registry (models, art suite actions) and the base contracts of custom names. */
const CONTRACTS: Array<[string, ModelContract]> = [
  ...listModels().flatMap((m) => [
    ...(m.contract ? [[m.id, m.contract] as [string, ModelContract]] : []),
    ...Object.entries(m.actionContracts ?? {}).map(([a, c]) => [`${m.id} ${a}`, c] as [string, ModelContract]),
  ]),
  ['base image', baseContract('custom-image', 'image_generation')],
  ['base video', baseContract('custom-video', 'video_generation')],
];

const promptSchema = (c: ModelContract): JsonSchema | boolean | undefined => (c.inputSchema.properties as Record<string, JsonSchema | boolean>).prompt;

describe('caps on every contract', () => {
  it.each(CONTRACTS)('%s: a published prompt cap (maxLength) and a total-body cap', (_name, c) => {
    const prompt = promptSchema(c);
    if (prompt !== undefined && prompt !== false) expect((prompt as JsonSchema).maxLength).toEqual(expect.any(Number));
    expect(Object.values(BODY_CAPS)).toContain(c.maxBodyBytes);
  });

  it('a contract without inline media gets the small cap; Base64 references get room for them', () => {
    const byId = (id: string) => listModels().find((m) => m.id === id)!.contract!;
    expect(byId('pixel-v6').maxBodyBytes).toBe(BODY_CAPS.urlsOnly);
    expect(byId('wave2.6-i2v-flash').maxBodyBytes).toBe(BODY_CAPS.oneInline);
    expect(byId('lumen-2-pro').maxBodyBytes).toBe(BODY_CAPS.manyInline);
  });

  it('Joi refuses a prompt one code point over the cap, naming the field and rule, and accepts one at the cap', () => {
    const lumen = listModels().find((m) => m.id === 'lumen-2-pro')!.contract!;
    const over = lumen.validate({ model: 'lumen-2-pro', prompt: 'é'.repeat(DEFAULT_PROMPT_MAX_LENGTH + 1) }, 'lumen-2-pro');
    expect(over).toMatchObject({ ok: false, violation: { status: 400, field: 'prompt', rule: 'maxLength' } });
    expect(lumen.validate({ model: 'lumen-2-pro', prompt: 'é'.repeat(DEFAULT_PROMPT_MAX_LENGTH) }, 'lumen-2-pro').ok).toBe(true);
  });

  it('inlineMedia lists only the Base64 / data-URI values of media fields, with their paths', () => {
    const lumen = listModels().find((m) => m.id === 'lumen-2-pro')!.contract!;
    const b64 = 'QUJDREVGR0hJSktMTU5PUA==';
    expect(lumen.inlineMedia({ image_urls: ['https://x.example/a.png', b64, `data:image/png;base64,${b64}`], extra: b64 })).toEqual([
      { field: 'image_urls.1', value: b64 },
      { field: 'image_urls.2', value: `data:image/png;base64,${b64}` },
    ]);
  });
});
