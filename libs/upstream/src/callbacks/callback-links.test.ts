import { createCallbackLinks, callbackTokenForLog, UPSTREAM_CALLBACKS_PATH } from './callback-links';

const KEY = 'callback-signing-key-0123456789abcdef';
const links = createCallbackLinks({ baseUrl: 'https://gw.example.com/', signingKey: KEY });
const NOW = 1_900_000_000;
const tokenOf = (url: string): string => url.slice(url.indexOf(`${UPSTREAM_CALLBACKS_PATH}/`) + UPSTREAM_CALLBACKS_PATH.length + 1);

describe('upstream callback tokens', () => {
  it('signs a URL under the base whose token verifies to the task, pool and expiry', () => {
    const url = links.url('task_abc123', 'video', NOW + 600);
    expect(url.startsWith(`https://gw.example.com${UPSTREAM_CALLBACKS_PATH}/task_abc123.video.${NOW + 600}.`)).toBe(true);
    expect(links.verify(tokenOf(url), NOW)).toEqual({ ok: true, claim: { taskId: 'task_abc123', pool: 'video', expiresAtS: NOW + 600 } });
  });

  it('refuses a token whose task, pool or expiry was changed, or signed with another key', () => {
    const token = tokenOf(links.url('task_abc123', 'video', NOW + 600));
    const [, , , sig] = token.split('.');
    for (const forged of [`task_abc124.video.${NOW + 600}.${sig}`, `task_abc123.image.${NOW + 600}.${sig}`, `task_abc123.video.${NOW + 6000}.${sig}`]) {
      expect(links.verify(forged, NOW)).toEqual({ ok: false, why: 'signature' });
    }
    const other = createCallbackLinks({ baseUrl: 'https://gw.example.com', signingKey: `${KEY}-other` });
    expect(links.verify(tokenOf(other.url('task_abc123', 'video', NOW + 600)), NOW)).toEqual({ ok: false, why: 'signature' });
    const flipped = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    expect(links.verify(flipped, NOW)).toEqual({ ok: false, why: 'signature' });
  });

  it('refuses an expired token, and malformed ones (parts, pool, digits, signature length)', () => {
    const token = tokenOf(links.url('task_abc123', 'image', NOW + 60));
    expect(links.verify(token, NOW + 60)).toEqual({ ok: false, why: 'expired' });
    const sig = token.split('.')[3]!;
    for (const bad of [
      '',
      'x',
      `task_abc123.image.${NOW + 60}`,
      `task_abc123.nopool.${NOW + 60}.${sig}`,
      `task_abc123.image.1e10.${sig}`,
      `task_abc123.image.${NOW + 60}.${sig}x`,
      `${token}.x`,
    ]) {
      expect(links.verify(bad, NOW)).toEqual({ ok: false, why: 'malformed' });
    }
  });

  it('a short signing key is refused, and the log form drops the signature', () => {
    expect(() => createCallbackLinks({ baseUrl: 'https://gw.example.com', signingKey: 'short' })).toThrow(/at least 32/);
    const token = tokenOf(links.url('task_abc123', 'image', NOW + 60));
    expect(callbackTokenForLog(token)).toBe(`task_abc123.image.${NOW + 60}`);
  });
});
