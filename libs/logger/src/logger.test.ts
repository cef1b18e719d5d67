import { Writable } from 'node:stream';
import { createLogger, safeUrl } from './index';

describe('logger', () => {
  it('never writes an authorization header or api key', () => {
    const lines: string[] = [];
    const dest = new Writable({
      write(chunk, _e, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
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
  it('drops the query parameters a database error carries (a channel key, a prompt)', () => {
    const lines: string[] = [];
    const dest = new Writable({
      write(chunk, _e, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const log = createLogger({ service: 't', destination: dest });
    const err = Object.assign(new Error('connection reset'), {
      query: 'INSERT INTO channels (api_key) VALUES ($1)',
      parameters: ['up-key-123'],
      driverError: { message: 'x', parameters: ['up-key-123'] },
    });
    log.error({ err }, 'insert failed');
    const out = lines.join('');
    expect(out).toContain('connection reset');
    expect(out).not.toContain('up-key-123');
  });
});
