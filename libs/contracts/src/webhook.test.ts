import { createHmac } from 'node:crypto';
import { WEBHOOK_REPLAY_WINDOW_SECONDS, callbackUrlProblem, signWebhook, verifyWebhook } from './webhook';

describe('webhook signature', () => {
  const body = '{"code":200,"data":{"id":"task_a","status":"completed"}}';

  it('is sha256=<hex> of HMAC-SHA256(secret, "<timestamp>.<body>")', () => {
    const hex = createHmac('sha256', 'whsec_x').update(`1700000000.${body}`).digest('hex');
    expect(signWebhook('whsec_x', 1700000000, body)).toBe(`sha256=${hex}`);
  });

  it('verifies within the replay window and refuses a changed body, timestamp or secret, or an old delivery', () => {
    const ts = 1700000000;
    const sig = signWebhook('whsec_x', ts, body);
    expect(verifyWebhook('whsec_x', ts, body, sig, ts + 10)).toBe(true);
    expect(verifyWebhook('whsec_x', ts, body.replace('completed', 'failed'), sig, ts)).toBe(false);
    expect(verifyWebhook('whsec_x', ts + 1, body, sig, ts)).toBe(false);
    expect(verifyWebhook('whsec_y', ts, body, sig, ts)).toBe(false);
    expect(verifyWebhook('whsec_x', ts, body, sig, ts + WEBHOOK_REPLAY_WINDOW_SECONDS + 1)).toBe(false);
    expect(verifyWebhook('whsec_x', ts, body, 'sha256=short', ts)).toBe(false);
  });
});

describe('callbackUrlProblem', () => {
  it.each([
    ['https://hooks.example.com/x', false, undefined],
    ['http://hooks.example.com/x', false, 'must use https (got http)'],
    ['https://10.0.0.5/x', false, expect.any(String)],
    ['https://localhost/x', false, expect.any(String)],
    ['https://user:pw@hooks.example.com/x', false, expect.any(String)],
    ['ftp://hooks.example.com/x', true, 'must use http or https (got ftp)'],
    ['http://127.0.0.1:9/x', true, undefined],
    ['http://u:p@127.0.0.1/x', true, 'must not contain credentials'],
    ['not a url', true, 'is not a valid absolute URL'],
  ])('%s (local mode %s) → %s', (url, allowInsecure, problem) => {
    expect(callbackUrlProblem(url, { allowInsecure })).toEqual(problem);
  });

  it('refuses a URL longer than 2048 characters', () => {
    expect(callbackUrlProblem(`https://hooks.example.com/${'a'.repeat(2100)}`, { allowInsecure: false })).toBe('must be at most 2048 characters');
  });
});
