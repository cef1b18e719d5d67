import { createResultLinks } from './result-links';
import { sniffMediaType } from './media-type';

const links = createResultLinks({ publicBaseUrl: 'https://gw.example/', signingKey: 'result-signing-key-for-the-unit-test' });

describe('result links', () => {
  it('signs a key and its expiry into a link under /v1/results that verifies until it expires', () => {
    const url = new URL(links.url('task_1/0.png', 1_800_000_000));
    expect(url.origin + url.pathname).toBe('https://gw.example/v1/results/task_1/0.png');
    const sig = url.searchParams.get('signature')!;
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(links.verify('task_1/0.png', '1800000000', sig, 1_799_999_999)).toBe(true);
    expect(links.verify('task_1/0.png', '1800000000', sig, 1_800_000_000)).toBe(false);
  });

  it('refuses another key, another expiry, a mangled signature or another signing key', () => {
    const sig = links.sign('task_1/0.png', 1_800_000_000);
    expect(links.verify('task_1/1.png', '1800000000', sig, 0)).toBe(false);
    expect(links.verify('task_1/0.png', '1800000001', sig, 0)).toBe(false);
    expect(links.verify('task_1/0.png', '1800000000', sig.slice(0, -1), 0)).toBe(false);
    expect(links.verify('task_1/0.png', '1.8e9', sig, 0)).toBe(false);
    const other = createResultLinks({ publicBaseUrl: 'https://gw.example', signingKey: 'another-signing-key-0123456789' });
    expect(other.verify('task_1/0.png', '1800000000', sig, 0)).toBe(false);
  });

  it('refuses a short signing key', () => {
    expect(() => createResultLinks({ publicBaseUrl: 'https://gw.example', signingKey: 'short' })).toThrow(/at least 16/);
  });
});

describe('sniffMediaType', () => {
  const ftyp = (brand: string) => Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from(`ftyp${brand}`, 'latin1'), Buffer.alloc(12)]);
  it.each([
    ['jpeg', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]), 'image'],
    ['png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]), 'image'],
    ['webp', Buffer.from('RIFF\0\0\0\0WEBPVP8 ', 'latin1'), 'image'],
    ['gif', Buffer.from('GIF89a\x01\0\x01\0', 'latin1'), 'image'],
    ['mp4', ftyp('isom'), 'video'],
    ['mov', ftyp('qt  '), 'video'],
    ['webm', Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82, 0x84]), Buffer.from('webm', 'latin1')]), 'video'],
  ])('knows %s from its first bytes', (format, head, kind) => {
    expect(sniffMediaType(head)).toMatchObject({ format, kind });
  });

  it('knows nothing else: HTML, an AVIF still (ftyp avif), a Matroska file, too few bytes', () => {
    expect(sniffMediaType(Buffer.from('<!doctype html>'))).toBeUndefined();
    expect(sniffMediaType(ftyp('avif'))).toBeUndefined();
    expect(sniffMediaType(Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3]), Buffer.from('matroska', 'latin1')]))).toBeUndefined();
    expect(sniffMediaType(Buffer.from([0xff, 0xd8]))).toBeUndefined();
  });
});
