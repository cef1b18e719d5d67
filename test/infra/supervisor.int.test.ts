import { waitFor } from '@gmg/testing';
import { restartDelay, Supervisor } from '../../scripts/lib/supervisor';

function makeSupervisor(over: Partial<ConstructorParameters<typeof Supervisor>[0]> = {}) {
  const lines: string[] = [];
  const sup = new Supervisor({
    stopTimeoutMs: 2000,
    maxRestarts: 2,
    backoffBaseMs: 20,
    backoffMaxMs: 100,
    stableAfterMs: 60_000,
    write: (l) => lines.push(l),
    color: false,
    ...over,
  });
  return { sup, lines };
}

const node = (script: string) => ({ command: process.execPath, args: ['-e', script], env: process.env, cwd: process.cwd() });

describe('restartDelay', () => {
  it('doubles from the base and stops at the cap', () => {
    expect([1, 2, 3, 4, 5, 6].map((a) => restartDelay(a, 1000, 8000))).toEqual([1000, 2000, 4000, 8000, 8000, 8000]);
  });
});

describe('Supervisor', () => {
  it('prefixes every output line of a child with its name', async () => {
    const { sup, lines } = makeSupervisor();
    sup.start({ name: 'echoer', ...node("console.log('one\\ntwo'); console.error('three'); setInterval(() => {}, 1000)") });
    await waitFor(() => lines.filter((l) => l.startsWith('echoer   |')).length >= 3, { what: 'three prefixed lines' });
    expect(lines).toEqual(expect.arrayContaining(['echoer   | one', 'echoer   | two', 'echoer   | three']));
    await sup.stopAll([]);
  });

  it('restarts a crashing child with backoff and gives up after maxRestarts', async () => {
    const { sup, lines } = makeSupervisor();
    sup.start({ name: 'crasher', ...node("console.log('boot'); process.exit(3)") });
    await waitFor(() => sup.state('crasher') === 'gave-up', { timeoutMs: 10_000, what: 'give up' });
    expect(lines.filter((l) => l.endsWith('| boot'))).toHaveLength(3); // first run + 2 restarts
    expect(lines.some((l) => l.includes('exited unexpectedly (code 3)') && l.includes('restart 1/2'))).toBe(true);
    expect(lines.some((l) => l.includes('giving up'))).toBe(true);
  });

  it('stops a child with SIGTERM and lets it finish its graceful shutdown', async () => {
    const { sup, lines } = makeSupervisor();
    sup.start({
      name: 'graceful',
      ...node(
        "process.on('SIGTERM', () => { console.log('draining'); setTimeout(() => process.exit(0), 100); }); console.log('up'); setInterval(() => {}, 1000)",
      ),
    });
    await waitFor(() => lines.includes('graceful | up'), { what: 'child up' });
    await sup.stopAll([['graceful']]);
    expect(lines).toContain('graceful | draining');
    expect(sup.state('graceful')).toBe('stopped');
    expect(lines.some((l) => l.includes('exited unexpectedly'))).toBe(false);
  });

  it('sends SIGKILL to a child that ignores SIGTERM past the timeout', async () => {
    const { sup, lines } = makeSupervisor({ stopTimeoutMs: 300 });
    sup.start({ name: 'stubborn', ...node("process.on('SIGTERM', () => console.log('ignoring')); console.log('up'); setInterval(() => {}, 1000)") });
    await waitFor(() => lines.includes('stubborn | up'), { what: 'child up' });
    await sup.stopAll([['stubborn']]);
    // the order of events: SIGTERM reached the child (it said so), and only then did the supervisor send SIGKILL
    const ignored = lines.indexOf('stubborn | ignoring');
    const killed = lines.findIndex((l) => l.includes('sending SIGKILL'));
    expect(ignored).toBeGreaterThanOrEqual(0);
    expect(killed).toBeGreaterThan(ignored);
    expect(sup.state('stubborn')).toBe('stopped');
  });
});
