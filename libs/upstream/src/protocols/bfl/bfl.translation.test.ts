import { normalizedRequest } from '@gmg/testing';
import { checkTranslation, translateInput, vendorModelOf } from '../../translation';
import { BFL_TRANSLATION } from './bfl.translation';

const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const normalized = normalizedRequest;

const noSettings = { settings: {}, modelMap: {} };

describe('bfl translation of lumen-2', () => {
  it('names the documented FLUX.2 endpoint per model unless the channel maps it', () => {
    for (const [ours, theirs] of [
      ['lumen-2-flex', 'flux-2-flex'],
      ['lumen-2-pro', 'flux-2-pro'],
      ['lumen-2-max', 'flux-2-max'],
    ]) {
      expect(vendorModelOf(BFL_TRANSLATION, noSettings, { model: ours, requestedModel: ours })).toBe(theirs);
    }
    expect(vendorModelOf(BFL_TRANSLATION, { modelMap: { 'lumen-2-pro': 'flux-2-pro-preview' } }, { model: 'lumen-2-pro', requestedModel: 'lumen-2-pro' })).toBe(
      'flux-2-pro-preview',
    );
  });

  it('sends the derived size, drops our size words and n, and carries the rest under BFL names', () => {
    const req = normalized({ model: 'lumen-2-pro', prompt: 'a lighthouse', resolution: '1MP', size: '3:2', seed: 7, output_format: 'png' });
    expect(checkTranslation(BFL_TRANSLATION, req)).toBeUndefined();
    expect(translateInput(BFL_TRANSLATION, noSettings, req)).toEqual({
      prompt: 'a lighthouse',
      width: 1248,
      height: 832,
      seed: 7,
      output_format: 'png',
      prompt_upsampling: false,
      safety_tolerance: 2,
    });
  });

  it('carries steps and guidance for flex only', () => {
    const flex = normalized({ model: 'lumen-2-flex', prompt: 'type', steps: 30, guidance: 3.5 });
    expect(translateInput(BFL_TRANSLATION, noSettings, flex)).toMatchObject({ steps: 30, guidance: 3.5, width: 1440, height: 1440 });
    // the contract forbids them for pro; a request that carries one anyway is refused before money moves
    const pro = normalized({ model: 'lumen-2-pro', prompt: 'x' });
    const withSteps = { ...pro, upstreamBody: { ...pro.upstreamBody, steps: 20 } };
    expect(checkTranslation(BFL_TRANSLATION, withSteps)).toEqual({ field: 'steps', message: expect.stringContaining('only FLUX.2 [flex]') });
  });

  it('puts references in input_image … input_image_8, without a data: prefix', () => {
    const urls = Array.from({ length: 8 }, (_, i) => `https://img.example.com/${i}.png`);
    urls[1] = `data:image/png;base64,${PNG_1PX}`;
    const req = normalized({ model: 'lumen-2-max', prompt: 'compose', image_urls: urls, resolution: '1MP' });
    const body = translateInput(BFL_TRANSLATION, noSettings, req);
    expect(body.input_image).toBe(urls[0]);
    expect(body.input_image_2).toBe(PNG_1PX);
    expect(body.input_image_8).toBe(urls[7]);
    expect(Object.keys(body).filter((k) => k.startsWith('input_image'))).toHaveLength(8);
    expect(body).not.toHaveProperty('image_urls');
  });

  it('leaves the size to BFL when size auto follows a reference nobody measured', () => {
    const req = normalized({ model: 'lumen-2-pro', prompt: 'same frame', size: 'auto', image_urls: ['https://img.example.com/a.png'] });
    const body = translateInput(BFL_TRANSLATION, noSettings, req);
    expect(body).not.toHaveProperty('width');
    expect(body).not.toHaveProperty('height');
  });

  it('refuses a side that is not a multiple of 16, naming the field the client used', () => {
    expect(checkTranslation(BFL_TRANSLATION, normalized({ model: 'lumen-2-pro', prompt: 'x', width: 1000, height: 512 }))?.field).toBe('width');
    expect(checkTranslation(BFL_TRANSLATION, normalized({ model: 'lumen-2-pro', prompt: 'x', width: 1024, height: 1000 }))?.field).toBe('height');
    expect(checkTranslation(BFL_TRANSLATION, normalized({ model: 'lumen-2-pro', prompt: 'x', size: '1000x1000' }))?.field).toBe('size');
    expect(checkTranslation(BFL_TRANSLATION, normalized({ model: 'lumen-2-pro', prompt: 'x', width: 1008, height: 512 }))).toBeUndefined();
  });

  it('refuses a field it has not declared, and a model it does not serve', () => {
    const req = normalized({ model: 'lumen-2-pro', prompt: 'x' });
    expect(checkTranslation(BFL_TRANSLATION, { ...req, upstreamBody: { ...req.upstreamBody, negative_prompt: 'y' } })?.field).toBe('negative_prompt');
    expect(checkTranslation(BFL_TRANSLATION, { ...req, model: 'pixel-v6', requestedModel: 'pixel-v6' })?.field).toBe('model');
  });

  it('puts the channel fixed body under the translation (the translation wins)', () => {
    const req = normalized({ model: 'lumen-2-pro', prompt: 'x', safety_tolerance: 4 });
    const body = translateInput(BFL_TRANSLATION, { settings: { body: { safety_tolerance: 0, extra_knob: true } } }, req);
    expect(body).toMatchObject({ safety_tolerance: 4, extra_knob: true });
  });
});
