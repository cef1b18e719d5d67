import { Writable } from 'node:stream';
import { createLogger, safeUrl } from './index';

describe('logger', () => {
  it('never writes an authorization header or api key', () => {
    const lines: string[] = [];
    const dest = new Writable({ write(chunk, _e, cb) { lines.push(String(chunk)); cb(); } });
    const log = createLogger({ service: 't', destination: dest });
    log.info({ req: { headers: { authorization: 'Bearer sk-secret' } }, channel: { api_key: 'up-secret' } }, 'hello');
    const out = lines.join('');
    expect(out).toContain('hello');
    expect(out).not.toContain('sk-secret');
    expect(out).not.toContain('up-secret');
  });
  it('strips credentials and queries from urls', () => {
    expect(safeUrl('https://u:p@h.example/x?token=1')).toBe('https://h.example/x?…');
  });
});
