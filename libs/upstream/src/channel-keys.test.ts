import { UpstreamError } from '@gmg/errors';
import { channelUsable, keyUsable, keyedTarget, pickKey, taskKey, type KeyCandidate } from './channel-keys';
import { healthEffect, statusEffect } from './channel-health';

const NOW = 1_000_000;
const key = (id: string, extra: Partial<KeyCandidate> = {}): KeyCandidate => ({
  id,
  weight: 1,
  secret: `secret-${id}`,
  status: 'active',
  coolingUntil: null,
  ...extra,
});
const seq = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length]!;
};

describe('key choice', () => {
  it('a key takes traffic when active, or cooling past its time; never when disabled or still cooling', () => {
    expect(keyUsable({ status: 'active', coolingUntil: null }, NOW)).toBe(true);
    expect(keyUsable({ status: 'cooling', coolingUntil: new Date(NOW - 1) }, NOW)).toBe(true);
    expect(keyUsable({ status: 'cooling', coolingUntil: new Date(NOW + 1) }, NOW)).toBe(false);
    expect(keyUsable({ status: 'disabled', coolingUntil: null }, NOW)).toBe(false);
  });

  it('picks by weight among the usable keys only', () => {
    const keys = [key('a', { weight: 1 }), key('b', { weight: 3 }), key('c', { status: 'disabled', weight: 100 })];
    // total usable weight 4: [0, 0.25) → a, [0.25, 1) → b; c never
    expect(pickKey(keys, { random: seq(0.1), now: NOW })?.id).toBe('a');
    expect(pickKey(keys, { random: seq(0.3), now: NOW })?.id).toBe('b');
    const counts = new Map<string, number>();
    const random = seq(...Array.from({ length: 400 }, (_, i) => i / 400));
    for (let i = 0; i < 400; i++) {
      const id = pickKey(keys, { random, now: NOW })!.id;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    expect(Object.fromEntries(counts)).toEqual({ a: 100, b: 300 });
  });

  it('weight-0 keys are standby: used only when no positive-weight key is usable', () => {
    const keys = [key('main', { weight: 2 }), key('spare', { weight: 0 })];
    expect(pickKey(keys, { random: seq(0.99), now: NOW })?.id).toBe('main');
    expect(pickKey([{ ...keys[0]!, status: 'disabled' }, keys[1]!], { now: NOW })?.id).toBe('spare');
  });

  it('no key list: null (the channel’s one api_key); every key set aside: undefined, and the channel is not usable', () => {
    expect(pickKey([], { now: NOW })).toBeNull();
    const down = [key('a', { status: 'disabled' }), key('b', { status: 'cooling', coolingUntil: new Date(NOW + 5) })];
    expect(pickKey(down, { now: NOW })).toBeUndefined();
    expect(channelUsable({ keys: down }, NOW)).toBe(false);
    expect(channelUsable({ keys: [] }, NOW)).toBe(true);
    expect(channelUsable({ keys: [key('a')], health: { status: 'cooling', coolingUntil: new Date(NOW - 1) } }, NOW)).toBe(false);
  });

  it('a task keeps its key; once that key is disabled or removed, another usable key of the channel', () => {
    const keys = [key('a'), key('b')];
    expect(taskKey(keys, 'b')?.id).toBe('b');
    expect(taskKey([keys[0]!, { ...keys[1]!, status: 'disabled' }], 'b')?.id).toBe('a');
    expect(taskKey(keys, 'gone')?.id).toMatch(/^[ab]$/);
    expect(taskKey([], 'gone')).toBeNull();
  });

  it('the target carries the chosen key as apiKey; without one, the channel’s own', () => {
    const row = { id: 'ch', name: 'n', protocol: 'gateway', baseUrl: 'http://x', apiKey: 'own-key' };
    expect(keyedTarget(row, key('k'))).toMatchObject({ apiKey: 'secret-k', keyId: 'k' });
    expect(keyedTarget(row, null)).toMatchObject({ apiKey: 'own-key' });
    expect(keyedTarget(row, null).keyId).toBeUndefined();
  });
});

describe('health effects', () => {
  const err = (kind: string, message = 'x', status?: number) => new UpstreamError(message, true, status, kind);
  it('our credentials or balance: refused; a rate limit: rate_limited; a down vendor: failing', () => {
    expect(healthEffect(err('channel', 'HTTP 401'))).toBe('refused');
    expect(healthEffect(err('quota', 'answered HTTP 429 insufficient_quota: You exceeded your current quota'))).toBe('refused');
    expect(healthEffect(err('quota', 'answered HTTP 429 rate_limit_error'))).toBe('rate_limited');
    expect(healthEffect(err('server'))).toBe('failing');
    expect(healthEffect(err('network'))).toBe('failing');
  });
  it('the client’s own error never counts: 400, a content refusal, 413, 404', () => {
    expect(healthEffect(new UpstreamError('HTTP 400 invalid prompt', false, 400, 'bad_request'))).toBe('none');
    expect(healthEffect(new UpstreamError('HTTP 403 content_policy_violation', false, 403, 'moderation'))).toBe('none');
    expect(healthEffect(new UpstreamError('HTTP 413', false, 413, 'bad_request'))).toBe('none');
    expect(healthEffect(new UpstreamError('HTTP 404', false, 404, 'not_found'))).toBe('none');
    expect(statusEffect(400, 'messages: field required')).toBe('none');
    expect(statusEffect(413)).toBe('none');
  });
  it('a raw answer: 401-403 and balance messages refused, 429 rate limited, 5xx and no answer failing', () => {
    expect(statusEffect(401)).toBe('refused');
    expect(statusEffect(400, 'Your credit balance is too low to access the API')).toBe('refused');
    expect(statusEffect(429)).toBe('rate_limited');
    expect(statusEffect(529)).toBe('failing');
    expect(statusEffect(undefined)).toBe('failing');
  });
});
