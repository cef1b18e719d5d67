import { spawn } from 'node:child_process';
import path from 'node:path';

/**
 * The buffered standard output (`flushMs`), in a real child process writing to a real pipe: a line arrives within
 * the interval while the process lives on, and the lines still buffered are written when the process exits.
 */
const INDEX = path.join(__dirname, 'index.ts');

function child(script: string): { lines: string[]; waitFor: (text: string, ms: number) => Promise<void>; exited: Promise<number | null>; kill: () => void } {
  const proc = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: path.join(__dirname, '..', '..', '..'),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  let buf = '';
  proc.stdout.on('data', (chunk: Buffer) => {
    buf += chunk.toString();
    const parts = buf.split('\n');
    buf = parts.pop() ?? '';
    lines.push(...parts);
    waiters.splice(0).forEach((w) => w());
  });
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const waitFor = (text: string, ms: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no line with ${text} within ${ms} ms: ${lines.join(' | ')}`)), ms);
      const check = (): void => {
        if (lines.some((l) => l.includes(text))) {
          clearTimeout(timer);
          resolve();
        } else waiters.push(check);
      };
      check();
    });
  return { lines, waitFor, exited, kill: () => proc.kill('SIGKILL') };
}

describe('buffered standard output (LOG_FLUSH_MS)', () => {
  it('writes a buffered line within the interval while the process keeps running', async () => {
    const c = child(`
      const { createLogger } = require(${JSON.stringify(INDEX)});
      const log = createLogger({ service: 't', flushMs: 50 });
      log.info('ready');
      setTimeout(() => {}, 20000);
    `);
    try {
      await c.waitFor('"msg":"ready"', 15_000);
      expect(c.lines.filter((l) => l.includes('"msg":"ready"'))).toHaveLength(1);
      expect(JSON.parse(c.lines.find((l) => l.includes('ready'))!)).toMatchObject({ service: 't', msg: 'ready' });
    } finally {
      c.kill();
      await c.exited;
    }
  }, 30_000);

  it('writes the lines still buffered when the process exits (an interval far longer than its life)', async () => {
    const c = child(`
      const { createLogger } = require(${JSON.stringify(INDEX)});
      const log = createLogger({ service: 't', flushMs: 5000 });
      for (let i = 0; i < 20; i++) log.info({ i }, 'line');
      log.error('last words');
      process.exit(3);
    `);
    expect(await c.exited).toBe(3);
    expect(c.lines.filter((l) => l.includes('"msg":"line"'))).toHaveLength(20);
    expect(c.lines.at(-1)).toContain('last words');
  }, 30_000);
});
