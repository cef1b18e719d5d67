import { createHmac } from 'node:crypto';
import { normalizedRequest } from '@gmg/testing';
import { translateInput } from '../../translation';
import { klingTokenCache, signKlingJwt } from './kling.jwt';
import { mapKlingTask } from './kling.status';
import { KLING_TRANSLATION } from './kling.translation';

const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { iss: string; exp: number; nbf: number };

describe('kling JWT', () => {
  it('signs {iss, exp: now + 30 min, nbf: now - 5 s} with the secret half of the key', () => {
    const token = signKlingJwt(' ak-1 | sk-2 ', 1_000_000);
    const [h, p, sig] = token.split('.') as [string, string, string];
    expect(createHmac('sha256', 'sk-2').update(`${h}.${p}`).digest('base64url')).toBe(sig);
    expect(claimsOf(token)).toEqual({ iss: 'ak-1', exp: 1_001_800, nbf: 999_995 });
  });

  it('reuses a token until five minutes before it expires, then signs a new one', () => {
    let t = 1_700_000_000_000;
    const token = klingTokenCache(() => t);
    const first = token('ak|sk');
    t += 24 * 60_000;
    expect(token('ak|sk')).toBe(first);
    expect(token('ak2|sk')).not.toBe(first);
    t += 2 * 60_000;
    const renewed = token('ak|sk');
    expect(renewed).not.toBe(first);
    expect(claimsOf(renewed).exp).toBe(Math.floor(t / 1000) + 1800);
  });

  it('refuses a key without exactly one | as the channel’s failure, without echoing it', () => {
    for (const key of ['only-one', 'a|b|c', '|sk', 'ak|']) {
      expect(() => signKlingJwt(key, 0)).toThrow(
        expect.objectContaining({ kind: 'channel', retryable: true, message: expect.not.stringContaining(key) }) as Error,
      );
    }
  });
});

describe('kling task words', () => {
  const d = 'poll';
  it('maps every documented word; an unknown one is still running', () => {
    expect(mapKlingTask({ task_status: 'submitted' }, d)).toEqual({ status: 'pending', progress: 0 });
    expect(mapKlingTask({ task_status: 'processing' }, d)).toEqual({ status: 'processing', progress: 50 });
    expect(mapKlingTask({ task_status: 'queued_somewhere' }, d)).toEqual({ status: 'processing', progress: 50 });
    expect(mapKlingTask({ task_status: 'succeed', task_result: { videos: [{ id: 'v', url: 'https://cdn.klingai.com/v.mp4', duration: '5.1' }] } }, d)).toEqual({
      status: 'completed',
      progress: 100,
      media: [{ kind: 'video', source: { url: 'https://cdn.klingai.com/v.mp4' }, durationSeconds: 5.1 }],
    });
    expect(mapKlingTask({ task_status: 'failed', task_status_msg: 'internal trace 42' }, d)).toEqual({
      status: 'failed',
      progress: 0,
      error: { message: 'Generation failed' },
    });
    expect(mapKlingTask({ task_status: 'failed', task_status_msg: 'Failure to pass the risk control system' }, d)).toMatchObject({
      error: { moderation: true },
    });
  });

  it('retries an answer without a status, and a succeed without a usable link', () => {
    for (const data of [undefined, {}, { task_status: 'succeed' }, { task_status: 'succeed', task_result: { videos: [{ url: 'ftp://x' }] } }]) {
      expect(() => mapKlingTask(data, d)).toThrow(expect.objectContaining({ retryable: true }) as Error);
    }
  });
});

describe('kling translation of kinetic-video-o1', () => {
  it('types the frames, drops the ratio a first frame sets, and strips a data: prefix', () => {
    const req = normalizedRequest({ model: 'kinetic-video-o1', prompt: 'walk', image_urls: ['https://i.example.com/a.png'] });
    const withData = { ...req, upstreamBody: { ...req.upstreamBody, image_urls: ['data:image/png;base64,AAAA'] } };
    expect(translateInput(KLING_TRANSLATION, { settings: {} }, withData)).toEqual({
      prompt: '<<<image_1>>> walk',
      mode: 'std',
      duration: '5',
      image_list: [{ image_url: 'AAAA', type: 'first_frame' }],
    });
  });
});
