import { StatementBatcher, type Pending } from './statement-batcher';

/** A run the test lets finish: each call is recorded with its batch, and waits until `release(i)`. */
function gatedRun() {
  const batches: number[][] = [];
  const gates: Array<() => void> = [];
  let running = 0;
  let mostAtOnce = 0;
  const run = async (batch: Array<Pending<number, number>>): Promise<void> => {
    batches.push(batch.map((p) => p.item));
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    await new Promise<void>((resolve) => gates.push(resolve));
    running--;
    for (const p of batch) p.resolve(p.item * 10);
  };
  return {
    run,
    batches,
    mostAtOnce: () => mostAtOnce,
    release: (i: number) => gates[i]!(),
    /** Resolves once `n` runs have started. */
    started: async (n: number) => {
      for (let turns = 0; batches.length < n; turns++) {
        if (turns > 1000) throw new Error(`run ${n} never started`);
        await new Promise<void>((r) => setImmediate(r));
      }
    },
  };
}

describe('StatementBatcher', () => {
  it('runs a lone item at once, in the same tick, alone', async () => {
    const g = gatedRun();
    const b = new StatementBatcher(g.run, { maxBatch: 10 });
    const answer = b.push(7);
    expect(g.batches).toEqual([[7]]);
    g.release(0);
    await expect(answer).resolves.toBe(70);
    await b.idle();
  });

  it('sends the items that arrive during a run together in the next run, each with its own answer', async () => {
    const g = gatedRun();
    const b = new StatementBatcher(g.run, { maxBatch: 10 });
    const answers = [1, 2, 3, 4].map((i) => b.push(i));
    expect(g.batches).toEqual([[1]]);
    g.release(0);
    await g.started(2);
    expect(g.batches).toEqual([[1], [2, 3, 4]]);
    g.release(1);
    await expect(Promise.all(answers)).resolves.toEqual([10, 20, 30, 40]);
  });

  it('takes at most maxBatch items per run', async () => {
    const g = gatedRun();
    const b = new StatementBatcher(g.run, { maxBatch: 2 });
    const answers = [1, 2, 3, 4, 5, 6].map((i) => b.push(i));
    for (let i = 0; i < 4; i++) {
      await g.started(i + 1);
      g.release(i);
    }
    await Promise.all(answers);
    expect(g.batches).toEqual([[1], [2, 3], [4, 5], [6]]);
  });

  it('never has more than `slots` runs in flight, and uses them all', async () => {
    const g = gatedRun();
    const b = new StatementBatcher(g.run, { maxBatch: 1, slots: 2 });
    const answers = [1, 2, 3, 4, 5].map((i) => b.push(i));
    expect(g.batches).toEqual([[1], [2]]);
    for (let i = 0; i < 5; i++) {
      await g.started(i + 1);
      g.release(i);
    }
    await Promise.all(answers);
    expect(g.mostAtOnce()).toBe(2);
    expect(g.batches.flat()).toEqual([1, 2, 3, 4, 5]);
  });

  it('by default runs one batch at a time', async () => {
    const g = gatedRun();
    const b = new StatementBatcher(g.run);
    const answers = [1, 2, 3].map((i) => b.push(i));
    expect(g.batches).toEqual([[1]]);
    g.release(0);
    await g.started(2);
    g.release(1);
    await Promise.all(answers);
    expect(g.mostAtOnce()).toBe(1);
    expect(g.batches).toEqual([[1], [2, 3]]);
  });

  it('rejects only the unanswered items of a run that throws; the answered keep theirs, the next batch goes on', async () => {
    let calls = 0;
    const b = new StatementBatcher<string, string>(
      async (batch) => {
        calls++;
        if (calls === 2) {
          batch[0]!.resolve('answered before the failure');
          throw new Error('statement failed');
        }
        for (const p of batch) p.resolve(`ok ${p.item}`);
      },
      { maxBatch: 2 },
    );
    // batches [a], [b, c] (throws after answering b), [d]
    const outcomes = await Promise.allSettled(['a', 'b', 'c', 'd'].map((i) => b.push(i)));
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([
      'ok a',
      'answered before the failure',
      'statement failed',
      'ok d',
    ]);
    expect(calls).toBe(3);
  });

  it('idle() resolves only once every waiting item has run', async () => {
    const g = gatedRun();
    const b = new StatementBatcher(g.run);
    void b.push(1);
    void b.push(2);
    let idle = false;
    const waited = b.idle().then(() => (idle = true));
    g.release(0);
    await g.started(2);
    expect(idle).toBe(false);
    g.release(1);
    await waited;
    expect(idle).toBe(true);
    await expect(new StatementBatcher(g.run).idle()).resolves.toBeUndefined();
  });
});
