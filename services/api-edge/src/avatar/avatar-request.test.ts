import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DomainError } from '@gmg/errors';
import { AVATAR_MAX_ASSETS, parseAvatarRequest } from './avatar-request';
import { avatarPriceKeys, avatarTaskRequest } from './submit-avatar.use-case';

const a = (i: number) => ({ url: `https://cdn.example.com/${i}.png`, name: `n${i}` });
const refusal = (body: unknown): DomainError => {
  try {
    parseAvatarRequest(body);
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
};

describe('parseAvatarRequest', () => {
  it('applies the spec defaults: asset_type Image, project_name default', () => {
    expect(parseAvatarRequest({ assets: [a(0)] })).toEqual({
      assets: [a(0)],
      assetType: 'Image',
      projectName: 'default',
      mediaUrls: [{ field: 'assets.0.url', url: a(0).url }],
    });
  });

  it('turns the url + name shorthand into one asset and keeps group / group_id', () => {
    expect(parseAvatarRequest({ ...a(1), group: { name: 'g' } })).toEqual({
      assets: [a(1)],
      assetType: 'Image',
      projectName: 'default',
      group: { name: 'g', description: '' },
      mediaUrls: [{ field: 'url', url: a(1).url }],
    });
    expect(parseAvatarRequest({ assets: [a(0)], group_id: 'group_1' }).groupId).toBe('group_1');
  });

  it("lists the asset URLs to resolve at submit, leaving out the gateway's own upload links", () => {
    const own = { url: 'https://gw.example/v1/uploads/img_1.png', name: 'mine' };
    expect(parseAvatarRequest({ assets: [own, a(2)] }, { trustedUrlPrefixes: ['https://gw.example/v1/uploads/'] }).mediaUrls).toEqual([
      { field: 'assets.1.url', url: a(2).url },
    ]);
  });

  it(`accepts ${AVATAR_MAX_ASSETS} assets and refuses one more, naming assets`, () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => a(i));
    expect(parseAvatarRequest({ assets: many(AVATAR_MAX_ASSETS) }).assets).toHaveLength(AVATAR_MAX_ASSETS);
    expect(refusal({ assets: many(AVATAR_MAX_ASSETS + 1) }).details).toEqual({ field: 'assets', rule: 'maxItems' });
  });

  it.each([
    [{ assets: [a(0)], url: a(1).url }, 'url', 'exclusive'],
    [{ assets: [a(0)], name: 'x' }, 'name', 'exclusive'],
    [{ assets: [a(0)], group: { name: 'g' }, group_id: 'group_1' }, 'group_id', 'exclusive'],
    [{ assets: [{ name: 'x' }] }, 'assets.0.url', 'required'],
    [{ assets: [{ url: a(0).url, name: '  ' }] }, 'assets.0.name', 'minLength'],
    [{ assets: [a(0)], asset_type: 'Gif' }, 'asset_type', 'enum'],
    [{ assets: [a(0)], project_name: 5 }, 'project_name', 'type'],
    [{ assets: [a(0), { url: 'ftp://x.example.com/a', name: 'f' }] }, 'assets.1.url', 'media-url'],
    [{ assets: [{ url: 'http://10.0.0.5/a.png', name: 'p' }] }, 'assets.0.url', 'media-url'],
    [[a(0)], '', 'type'],
  ])('refuses %j naming %s (%s)', (body, field, rule) => {
    const e = refusal(body);
    expect(e.details).toEqual({ field, rule });
    expect(e.type).toBe('invalid_request_error');
    if (field) expect(e.message).toContain(`\`${field}\``);
  });
});

describe('avatar billing', () => {
  it('bills n assets under the per-type key, and infra/prices.json prices every asset type', () => {
    const req = avatarTaskRequest(parseAvatarRequest({ asset_type: 'Audio', assets: [a(0), a(1), a(2)] }), ['asset_a', 'asset_b', 'asset_c'], 'group_g');
    expect(req.billing).toEqual([{ keys: ['avatar-asset@audio', 'avatar-asset'], quantity: 3, label: '3 audio assets' }]);
    expect(req.expected).toEqual({ kind: 'assets', count: 3 });
    const prices = JSON.parse(readFileSync(join(__dirname, '../../../../infra/prices.json'), 'utf8')) as Array<{ key: string }>;
    for (const t of ['Image', 'Video', 'Audio']) expect(prices.map((p) => p.key)).toContain(avatarPriceKeys(t)[0]);
  });
});
