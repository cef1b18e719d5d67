import { artgenAction, artgenBillingItem, normalizeArtgenVersion } from './artgen-billing';

describe('artgenBillingItem', () => {
  it('lists keys from most to least specific with version and speed', () => {
    expect(artgenBillingItem({ action: 'imagine', version: '8.2', speed: 'fast' }).keys).toEqual([
      'artgen@imagine-v8.2-fast',
      'artgen@imagine-v8.2',
      'artgen@imagine-fast',
      'artgen@imagine',
      'artgen',
    ]);
  });

  it('adds no speed suffix for relax or omitted speed', () => {
    expect(artgenBillingItem({ action: 'upscale', version: 'v7', speed: 'relax' }).keys).toEqual(['artgen@upscale-v7', 'artgen@upscale', 'artgen']);
    expect(artgenBillingItem({ action: 'upscale' }).keys).toEqual(['artgen@upscale', 'artgen']);
    expect(artgenBillingItem({ action: 'zoom', speed: 'turbo' }).keys).toEqual(['artgen@zoom-turbo', 'artgen@zoom', 'artgen']);
  });

  it.each([
    ['8.2', false, 'v8.2'],
    ['v8.1', false, 'v8.1'],
    ['V7', false, 'v7'],
    ['7.0', false, 'v7'],
    [7, false, 'v7'],
    ['6.1', false, 'v6.1'],
    ['5.2', false, 'v5.2'],
    ['v5.1', false, 'v5.1'],
    ['7', true, 'altstyle7'],
    ['6', true, 'altstyle6'],
    ['8.2', true, 'v8.2'],
    ['9', false, undefined],
    ['banana', false, undefined],
  ])('normalizes version %p (altStyle %p) to %p', (v, alt, expected) => {
    expect(normalizeArtgenVersion(v, alt)).toBe(expected);
  });

  it('uses the altstyle version in keys', () => {
    expect(artgenBillingItem({ action: 'pan', version: '6', altStyle: true, speed: 'fast' }).keys[0]).toBe('artgen@pan-altstyle6-fast');
  });

  it('charges video times batch_size and other actions once', () => {
    expect(artgenBillingItem({ action: 'video', batchSize: 4 }).quantity).toBe(4);
    expect(artgenBillingItem({ action: 'video-720p', batchSize: 2 }).keys[0]).toBe('artgen@video-720p');
    expect(artgenBillingItem({ action: 'imagine', batchSize: 4 }).quantity).toBe(1);
  });

  it('maps path segments to billing actions and refuses unknown ones', () => {
    expect(artgenAction('high-variation')).toBe('high_variation');
    expect(artgenAction('remix-strong')).toBe('remix_strong');
    expect(artgenAction('generations')).toBe('imagine');
    expect(() => artgenBillingItem({ action: 'explode' })).toThrow('unknown art suite action');
  });
});
