import fc from 'fast-check';
import Ajv2020 from 'ajv/dist/2020';
import { baseContract } from './base-contract';
import { bodyArbitrary } from './contract-arbitraries.test-kit';
import { JOI_OPTIONS } from './dsl-to-joi';
import { SCHEMA_VERSION } from './common-fields';

const ajv = new Ajv2020({ strict: true, allErrors: false });
const NAME = 'my-custom-model';

describe('baseContract', () => {
  it('image_generation: source base, ack A, image pool cadence, billed per image then per name, body passed upstream as sent', () => {
    const c = baseContract(NAME, 'image_generation');
    expect(c).toMatchObject({
      operation: 'image_generation',
      method: 'POST',
      endpoint: '/v1/images/generations',
      source: 'base',
      ack: 'A',
      schemaVersion: SCHEMA_VERSION,
      estimatedSeconds: 60,
      pollIntervalMs: { min: 2000, max: 5000 },
    });
    const body = { model: NAME, prompt: 'a fox', quality: 'ultra', image_urls: ['https://cdn.example.com/a.png'] };
    const out = c.validate(body, NAME);
    if (!out.ok) throw new Error(out.violation.message);
    expect(out.value).toMatchObject({ model: NAME, requestedModel: NAME, pool: 'image', expected: { kind: 'images', count: 1 } });
    expect(out.value.billing).toEqual([{ keys: [`${NAME}@image`, NAME], quantity: 1, label: '1 image' }]);
    expect(out.value.upstreamBody).toEqual(body);
    expect(out.value.upstreamBody).not.toBe(body);
  });

  it('video_generation: video pool, 300 s estimate, 5-10 s polls, billed per video then per name', () => {
    const c = baseContract(NAME, 'video_generation');
    expect(c).toMatchObject({ endpoint: '/v1/videos/generations', source: 'base', estimatedSeconds: 300, pollIntervalMs: { min: 5000, max: 10000 } });
    const out = c.validate({ model: NAME, prompt: 'waves', duration: 7, video_urls: ['https://media.example.net/v.mp4'] }, NAME);
    if (!out.ok) throw new Error(out.violation.message);
    expect(out.value).toMatchObject({ pool: 'video', expected: { kind: 'videos', count: 1 } });
    expect(out.value.billing[0]!.keys).toEqual([`${NAME}@video`, NAME]);
    expect(out.value.upstreamBody).toMatchObject({ duration: 7 });
  });

  it.each([
    ['prompt missing', { model: NAME }, 'prompt'],
    ['prompt empty', { model: NAME, prompt: '' }, 'prompt'],
    ['prompt not a string', { model: NAME, prompt: 3 }, 'prompt'],
    ['model another name', { model: 'other', prompt: 'x' }, 'model'],
    ['image URL on a private address', { model: NAME, prompt: 'x', image_urls: ['http://10.0.0.1/a.png'] }, 'image_urls.0'],
  ])('rejects with 400 naming the field: %s', (_what, body, field) => {
    const out = baseContract(NAME, 'image_generation').validate(body, NAME);
    expect(out.ok).toBe(false);
    if (out.ok) return;
    expect(out.violation).toMatchObject({ status: 400, field });
    expect(out.violation.message).toContain(field.split('.')[0]);
  });

  it('rejects a video URL on loopback for video_generation', () => {
    const out = baseContract(NAME, 'video_generation').validate({ model: NAME, prompt: 'x', video_urls: ['http://127.0.0.1/v.mp4'] }, NAME);
    expect(out.ok || out.violation.field).toBe('video_urls.0');
  });

  it('is cached per name and operation', () => {
    expect(baseContract(NAME, 'image_generation')).toBe(baseContract(NAME, 'image_generation'));
    expect(baseContract(NAME, 'image_generation')).not.toBe(baseContract(NAME, 'video_generation'));
    expect(baseContract('another', 'image_generation').inputSchema).not.toEqual(baseContract(NAME, 'image_generation').inputSchema);
  });

  it.each(['image_generation', 'video_generation'] as const)('%s: input_schema compiles under Ajv 2020 strict and agrees with the validator', (op) => {
    const c = baseContract(NAME, op);
    const check = ajv.compile(c.inputSchema);
    expect(c.inputSchema).toMatchObject({ additionalProperties: true, required: ['model', 'prompt'] });
    let accepted = 0;
    let rejected = 0;
    fc.assert(
      fc.property(
        fc.boolean().chain((clean) => bodyArbitrary(c, [NAME], clean)),
        (body) => {
          const schemaOk = check(body);
          const joiOk = c.joiSchema.validate(body, JOI_OPTIONS).error === undefined;
          if (schemaOk !== joiOk) throw new Error(`Ajv says ${schemaOk}, Joi says ${joiOk}: ${ajv.errorsText(check.errors)}`);
          const full = c.validate(body, NAME);
          if (full.ok) accepted++;
          else {
            rejected++;
            if (schemaOk) expect(full.violation.rule).toBe('server:media-url');
          }
        },
      ),
      { numRuns: 200, seed: 20250601 },
    );
    expect(accepted).toBeGreaterThan(10);
    expect(rejected).toBeGreaterThan(10);
  });
});
