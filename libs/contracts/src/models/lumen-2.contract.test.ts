import Ajv2020 from 'ajv/dist/2020';
import { resolveModel } from './registry';
import type { NormalizedRequest, ValidationOutcome } from './types';
import { LUMEN_DIMENSIONS, LUMEN_RATIOS, LUMEN_TIERS } from './lumen-2.dimensions';
import { base64ImageSize } from './image-header';

const validate = (body: Record<string, unknown>, model = 'lumen-2-pro'): ValidationOutcome =>
  resolveModel(model)!.contract!.validate({ model, prompt: 'a red fox', ...body }, model);

const ok = (body: Record<string, unknown>, model?: string): NormalizedRequest => {
  const r = validate(body, model);
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r.violation)}`);
  return r.value;
};
const bad = (body: Record<string, unknown>, model?: string) => {
  const r = validate(body, model);
  if (r.ok) throw new Error(`expected a violation for ${JSON.stringify(body)}`);
  return r.violation;
};

/** A PNG header (signature + IHDR) of the given size, as a data URI: enough for the header reader. */
function pngDataUri(width: number, height: number): string {
  const b = Buffer.alloc(33);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(b, 0);
  b.writeUInt32BE(13, 8);
  b.write('IHDR', 12, 'latin1');
  b.writeUInt32BE(width, 16);
  b.writeUInt32BE(height, 20);
  b.writeUInt8(8, 24);
  b.writeUInt8(2, 25);
  return `data:image/png;base64,${b.toString('base64')}`;
}

function jpegBase64(width: number, height: number): string {
  const app0 = Buffer.from([0xff, 0xe0, 0x00, 0x10, ...Buffer.from('JFIF\0'), 1, 1, 0, 0, 1, 0, 1, 0, 0]);
  const sof = Buffer.from([0xff, 0xc0, 0x00, 0x11, 0x08, height >> 8, height & 255, width >> 8, width & 255, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), app0, sof, Buffer.from([0xff, 0xd9])]).toString('base64');
}

describe('lumen-2 output dimensions', () => {
  it.each(LUMEN_RATIOS.flatMap((r) => LUMEN_TIERS.map((t, i) => [r, t, ...LUMEN_DIMENSIONS[r][i]!] as const)))(
    'size %s at %s gives %ix%i',
    (size, resolution, width, height) => {
      const v = ok({ size, resolution });
      expect(v.derived).toMatchObject({ width, height, tier: resolution });
      expect(v.expected).toEqual({ kind: 'images', count: 1, width, height, format: 'jpeg' });
      expect(v.billing).toEqual([{ keys: [`lumen-2-pro@${resolution}`, 'lumen-2-pro'], quantity: 1, label: expect.any(String) }]);
    },
  );

  it.each([
    ['512', '1MP'],
    ['512P', '1MP'],
    ['1M', '1MP'],
    ['1K', '2MP'],
    ['1024', '2MP'],
    ['2K', '3MP'],
    ['2048', '3MP'],
    ['4K', '4MP'],
  ])('legacy resolution alias %s maps to %s (also in the upstream body)', (alias, tier) => {
    const v = ok({ resolution: alias });
    expect(v.derived.tier).toBe(tier);
    expect(v.upstreamBody.resolution).toBe(tier);
  });

  it('defaults to 2MP 1:1 jpeg with the spec defaults filled in', () => {
    const v = ok({});
    expect(v.derived).toMatchObject({ width: 1440, height: 1440, tier: '2MP' });
    expect(v.upstreamBody).toMatchObject({ resolution: '2MP', size: '1:1', output_format: 'jpeg', n: 1, safety_tolerance: 2, prompt_upsampling: false });
  });

  it('width+height pair beats pixel string, resolution and ratio', () => {
    const v = ok({ width: 800, height: 600, size: '1000x1000', resolution: '4MP' });
    expect(v.derived).toMatchObject({ width: 800, height: 600, tier: '1MP', dimensionSource: 'width-height' });
  });

  it('pixel string beats resolution and is billed at the smallest tier holding it', () => {
    const v = ok({ size: '1600x1200', resolution: '1MP' });
    expect(v.derived).toMatchObject({ width: 1600, height: 1200, tier: '2MP', dimensionSource: 'pixel-string' });
  });

  it('size auto without references uses 1:1 at the tier', () => {
    expect(ok({ size: 'auto', resolution: '3MP' }).derived).toMatchObject({ width: 1536, height: 1536, dimensionSource: 'auto-default' });
  });

  it('size auto follows the ratio of a Base64 first reference (PNG and bare JPEG)', () => {
    expect(ok({ size: 'auto', resolution: '1MP', image_urls: [pngDataUri(1600, 900)] }).derived).toMatchObject({ width: 1344, height: 752, ratio: '16:9' });
    expect(ok({ size: 'auto', resolution: '1MP', image_urls: [jpegBase64(600, 1400)] }).derived).toMatchObject({ ratio: '9:21' });
  });

  it('size auto with an unmeasured URL first reference leaves the size to the upstream (not fetched at the edge), billed at the tier', () => {
    const v = ok({ size: 'auto', resolution: '3MP', image_urls: ['https://cdn.example.com/wide.png'] });
    expect(v.derived).toEqual({ tier: '3MP', dimensionSource: 'auto-upstream', mode: 'image-to-image' });
    expect(v.expected).toEqual({ kind: 'images', count: 1, format: 'jpeg' });
    expect(v.billing[0]!.keys[0]).toBe('lumen-2-pro@3MP');
  });

  it.each([
    [{ width: 1920, height: 1080 }, '2MP', 1920, 1072, '16:9'],
    [{ width: 900, height: 1200 }, '1MP', 864, 1152, '3:4'],
    [{ width: 3000, height: 1300 }, '4MP', 3072, 1312, '21:9'],
    [{ width: 500, height: 500 }, '3MP', 1536, 1536, '1:1'],
  ])('size auto follows a measured URL reference %o at %s: %ix%i (%s)', (ref, resolution, width, height, ratio) => {
    const url = 'https://gw.example/v1/uploads/img_1.png';
    const r = resolveModel('lumen-2-pro')!.contract!.validate(
      { model: 'lumen-2-pro', prompt: 'x', size: 'auto', resolution, image_urls: [url, 'https://cdn.example.com/other.png'] },
      'lumen-2-pro',
      { referenceSizes: new Map([[url, ref]]) },
    );
    if (!r.ok) throw new Error(r.violation.message);
    expect(r.value.derived).toMatchObject({ width, height, ratio, dimensionSource: 'auto-reference' });
    expect(r.value.expected).toMatchObject({ width, height });
  });

  it('counts a measured URL reference in the 9 MP budget (output + references)', () => {
    const url = 'https://gw.example/v1/uploads/img_big.png';
    const r = resolveModel('lumen-2-pro')!.contract!.validate({ model: 'lumen-2-pro', prompt: 'x', resolution: '4MP', image_urls: [url] }, 'lumen-2-pro', {
      referenceSizes: new Map([[url, { width: 3000, height: 2000 }]]),
    });
    expect(r.ok ? undefined : r.violation).toMatchObject({ field: 'image_urls', rule: 'server:total-pixels' });
  });

  it("lists its http(s) media URLs for resolution at submit, without the gateway's own links or Base64", () => {
    const r = resolveModel('lumen-2-pro')!.contract!.validate(
      { model: 'lumen-2-pro', prompt: 'x', image_urls: ['https://cdn.example.com/a.png', 'https://gw.example/v1/uploads/img_1.png', jpegBase64(10, 10)] },
      'lumen-2-pro',
      { trustedUrlPrefixes: ['https://gw.example/v1/uploads/'] },
    );
    expect(r.ok && r.mediaUrls).toEqual([{ field: 'image_urls.0', url: 'https://cdn.example.com/a.png' }]);
  });

  it('reads image headers of PNG and JPEG', () => {
    expect(base64ImageSize(pngDataUri(640, 480))).toEqual({ width: 640, height: 480 });
    expect(base64ImageSize(jpegBase64(320, 200))).toEqual({ width: 320, height: 200 });
  });
});

describe('lumen-2 limits and rules', () => {
  it('rejects an unknown resolution with the allowed tiers and aliases in the message', () => {
    const v = bad({ resolution: '8MP' });
    expect(v).toMatchObject({ status: 400, type: 'invalid_request_error', field: 'resolution', rule: 'enum' });
    expect(v.message).toBe("`resolution` must be one of 1MP, 2MP, 3MP, 4MP (or a legacy alias 512, 512P, 1M, 1K, 1024, 2K, 2048, 4K); got '8MP'");
  });

  it.each([
    [{ width: 1024 }, 'height', 'together'],
    [{ height: 1024 }, 'width', 'together'],
    [{ width: 63, height: 1024 }, 'width', 'min'],
    [{ width: 2049, height: 2048 }, 'width', 'server:output-pixels'],
    [{ size: '2049x2048' }, 'size', 'server:pixel-string-limits'],
    [{ size: '63x1024' }, 'size', 'server:pixel-string-limits'],
    [{ size: '5:4' }, 'size', 'enum'],
    [{ size: '1024X768' }, 'size', 'enum'],
    [{ image_urls: new Array(9).fill('https://cdn.example.com/a.png') }, 'image_urls', 'maxItems'],
    [{ output_format: 'gif' }, 'output_format', 'enum'],
    [{ n: 2 }, 'n', 'max'],
    [{ seed: 1.5 }, 'seed', 'type'],
    [{ prompt_upsampling: 'true' }, 'prompt_upsampling', 'type'],
    [{ safety_tolerance: 6 }, 'safety_tolerance', 'max'],
    [{ safety_tolerance: -1 }, 'safety_tolerance', 'min'],
    [{ steps: 20 }, 'steps', 'forbidden'],
    [{ guidance: 3 }, 'guidance', 'forbidden'],
    [{ prompt: '' }, 'prompt', 'minLength'],
    [{ prompt: undefined }, 'prompt', 'required'],
    [{ model: 'lumen-2-flex' }, 'model', 'enum'],
    [{ image_urls: ['ftp://cdn.example.com/a.png'] }, 'image_urls.0', 'server:media-url'],
    [{ image_urls: ['http://169.254.169.254/latest'] }, 'image_urls.0', 'server:media-url'],
  ])('lumen-2-pro rejects %j on %s (%s) with 400', (body, field, rule) => {
    expect(bad(body as Record<string, unknown>)).toMatchObject({ status: 400, type: 'invalid_request_error', field, rule });
  });

  it('accepts exactly 4 MP and sides of 64', () => {
    expect(ok({ width: 2048, height: 2048 }).derived).toMatchObject({ tier: '4MP' });
    expect(ok({ size: '64x64' }).derived).toMatchObject({ width: 64, height: 64, tier: '1MP' });
  });

  it('rejects output plus Base64 references above 9 MP and ignores unmeasurable URL references', () => {
    const big = pngDataUri(2048, 1536); // 3 MP each
    expect(bad({ resolution: '4MP', image_urls: [big, big] })).toMatchObject({ field: 'image_urls', rule: 'server:total-pixels' });
    expect(ok({ resolution: '4MP', image_urls: [big] }).derived.tier).toBe('4MP');
    expect(ok({ resolution: '4MP', image_urls: new Array(8).fill('https://cdn.example.com/huge.png') }).derived.tier).toBe('4MP');
  });

  it('lumen-2-flex accepts steps and guidance with defaults 50 and 5', () => {
    const v = ok({ model: 'lumen-2-flex' }, 'lumen-2-flex');
    expect(v.upstreamBody).toMatchObject({ steps: 50, guidance: 5 });
    expect(bad({ model: 'lumen-2-flex', steps: 51 }, 'lumen-2-flex')).toMatchObject({ field: 'steps', rule: 'max' });
    expect(bad({ model: 'lumen-2-flex', guidance: 1.4 }, 'lumen-2-flex')).toMatchObject({ field: 'guidance', rule: 'min' });
  });

  it('lumen-2-max rejects steps and tolerates unknown extra fields', () => {
    expect(bad({ model: 'lumen-2-max', steps: 10 }, 'lumen-2-max')).toMatchObject({ field: 'steps', rule: 'forbidden' });
    expect(ok({ model: 'lumen-2-max', extra_field: { a: 1 } }, 'lumen-2-max').upstreamBody.extra_field).toEqual({ a: 1 });
  });

  it('accepts trusted upload links on loopback when the edge passes their prefix', () => {
    const body = { model: 'lumen-2-pro', prompt: 'x', image_urls: ['http://127.0.0.1:3000/v1/uploads/images/abc.png'] };
    const c = resolveModel('lumen-2-pro')!.contract!;
    expect(c.validate(body, 'lumen-2-pro').ok).toBe(false);
    expect(c.validate(body, 'lumen-2-pro', { trustedUrlPrefixes: ['http://127.0.0.1:3000/v1/uploads/'] }).ok).toBe(true);
  });

  it('publishes a schema that compiles under Ajv 2020 strict mode', () => {
    const ajv = new Ajv2020({ strict: true });
    for (const id of ['lumen-2-flex', 'lumen-2-pro', 'lumen-2-max']) expect(() => ajv.compile(resolveModel(id)!.contract!.inputSchema)).not.toThrow();
  });
});

describe('defaults applied to a body that names `__proto__` (lumen-2 passes unknown fields through)', () => {
  it("keeps it an own field of the upstream body and never changes the body's prototype", () => {
    const body = JSON.parse('{"model":"lumen-2-pro","prompt":"a red fox","__proto__":{"polluted":true}}') as Record<string, unknown>;
    const r = resolveModel('lumen-2-pro')!.contract!.validate(body, 'lumen-2-pro');
    if (!r.ok) throw new Error(JSON.stringify(r.violation));
    const up = r.value.upstreamBody;
    expect(Object.getPrototypeOf(up)).toBe(Object.prototype);
    expect(Object.keys(up)).toContain('__proto__');
    expect((up as { polluted?: unknown }).polluted).toBeUndefined();
    expect(JSON.parse(JSON.stringify(up)).__proto__).toEqual({ polluted: true });
    expect(up.resolution).toBeDefined();
  });
});
