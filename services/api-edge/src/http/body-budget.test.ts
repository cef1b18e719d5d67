import type { IncomingMessage } from 'node:http';
import { BodyBudget, LARGE_BODY_BYTES, largeBodyBytes } from './body-budget';

/** One `take` whose outcome can be awaited: granted (with its release) or refused. */
function take(budget: BodyBudget, bytes: number) {
  let cancel: () => void = () => undefined;
  const outcome = new Promise<{ granted: true; release: () => void } | { granted: false }>((resolve) => {
    cancel =
      budget.take(
        bytes,
        (release) => resolve({ granted: true, release }),
        () => resolve({ granted: false }),
      ) ?? cancel;
  });
  return { outcome, cancel: () => cancel() };
}

const released = async (t: ReturnType<typeof take>): Promise<() => void> => {
  const o = await t.outcome;
  if (!o.granted) throw new Error('refused');
  return o.release;
};

describe('BodyBudget', () => {
  it('admits at once while the bodies fit, and makes the next wait until one is released', async () => {
    const b = new BodyBudget(100, 10_000);
    const r1 = await released(take(b, 60));
    const r2 = await released(take(b, 40));
    expect(b.inFlight).toBe(100);
    const third = take(b, 10);
    expect(b.waiting).toBe(1);
    let done = false;
    void third.outcome.then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(false);
    r2();
    const r3 = await released(third);
    expect(b.inFlight).toBe(70);
    expect(b.waiting).toBe(0);
    r1();
    r3();
    expect(b.inFlight).toBe(0);
  });

  it('keeps arrival order: a small body never overtakes a large one that waits', async () => {
    const b = new BodyBudget(100, 10_000);
    const r1 = await released(take(b, 90));
    const big = take(b, 50);
    const small = take(b, 5); // would fit now (95 ≤ 100), but the large one is first in line
    const order: string[] = [];
    void big.outcome.then(() => order.push('big'));
    void small.outcome.then(() => order.push('small'));
    await Promise.resolve();
    expect(b.waiting).toBe(2);
    expect(b.inFlight).toBe(90);
    r1();
    (await released(big))();
    (await released(small))();
    expect(order).toEqual(['big', 'small']);
    expect(b.inFlight).toBe(0);
  });

  it('refuses a body that waited waitMs, and then admits the next one that fits', async () => {
    const b = new BodyBudget(100, 50);
    const r1 = await released(take(b, 80));
    const waited = take(b, 50);
    expect(await waited.outcome).toEqual({ granted: false });
    expect(b.waiting).toBe(0);
    expect(b.inFlight).toBe(80);
    r1();
    expect(b.inFlight).toBe(0);
  });

  it('refuses at once with no waiting allowed (waitMs 0)', async () => {
    const b = new BodyBudget(100, 0);
    const r1 = await released(take(b, 100));
    expect(await take(b, 1).outcome).toEqual({ granted: false });
    r1();
  });

  it('a waiter whose client left gives up its place, and the ones behind it move up', async () => {
    const b = new BodyBudget(100, 10_000);
    const r1 = await released(take(b, 100));
    const gone = take(b, 100);
    const next = take(b, 30);
    expect(b.waiting).toBe(2);
    gone.cancel();
    expect(b.waiting).toBe(1);
    r1();
    (await released(next))();
    expect(b.inFlight).toBe(0);
  });

  it('a body larger than the whole budget is admitted alone, never refused for its size', async () => {
    const b = new BodyBudget(100, 10_000);
    const r1 = await released(take(b, 10));
    const huge = take(b, 1000);
    expect(b.waiting).toBe(1);
    r1();
    const rh = await released(huge);
    expect(b.inFlight).toBe(100);
    rh();
  });

  it('a release counts once, however often it is called', async () => {
    const b = new BodyBudget(100, 10_000);
    const r1 = await released(take(b, 40));
    const r2 = await released(take(b, 40));
    r1();
    r1();
    expect(b.inFlight).toBe(40);
    r2();
    expect(b.inFlight).toBe(0);
  });
});

describe('BodyBudget per tenant', () => {
  const takeAs = (b: BodyBudget, bytes: number, tenant: string) =>
    new Promise<{ granted: boolean; release: () => void; grow: (n: number) => void }>((resolve) => {
      b.take(
        bytes,
        (release, grow) => resolve({ granted: true, release, grow }),
        () => resolve({ granted: false, release: () => undefined, grow: () => undefined }),
        tenant,
      );
    });

  it("one tenant holds at most its share; its own waiting bodies never hold up another tenant's", async () => {
    const b = new BodyBudget(100, 10_000, 0.5);
    const a1 = await takeAs(b, 40, 'A');
    let a2Granted = false;
    const a2 = takeAs(b, 40, 'A').then((r) => {
      a2Granted = true;
      return r;
    }); // 80 > A's share of 50: waits
    await Promise.resolve();
    expect({ waiting: b.waiting, a2Granted }).toEqual({ waiting: 1, a2Granted: false });
    const other = await takeAs(b, 40, 'B'); // behind A's waiting body in time, admitted at once
    expect({ granted: other.granted, inFlight: b.inFlight, heldByA: b.heldBy('A') }).toEqual({ granted: true, inFlight: 80, heldByA: 40 });
    a1.release();
    expect((await a2).granted).toBe(true);
    expect(b.heldBy('A')).toBe(40);
  });

  it('a body larger than the share is admitted when its tenant holds nothing; grown bytes count and are given back', async () => {
    const b = new BodyBudget(100, 10_000, 0.5);
    const big = await takeAs(b, 70, 'A');
    expect(big.granted).toBe(true);
    big.grow(20);
    expect({ inFlight: b.inFlight, heldByA: b.heldBy('A'), over: b.overFor('A') }).toEqual({ inFlight: 90, heldByA: 90, over: false });
    big.grow(20);
    expect(b.overFor('A')).toBe(true);
    big.release();
    expect({ inFlight: b.inFlight, heldByA: b.heldBy('A') }).toEqual({ inFlight: 0, heldByA: 0 });
  });
});

describe('largeBodyBytes', () => {
  const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
  const cap = (n: number) => () => n;
  it('is the declared length of a large body within the cap', () => {
    expect(largeBodyBytes(req({ 'content-length': String(LARGE_BODY_BYTES) }), cap(10 * LARGE_BODY_BYTES))).toEqual({
      bytes: LARGE_BODY_BYTES,
      chunked: false,
    });
  });
  it('is nothing for a small body, no body, or a declared length over the cap (refused 413 unread)', () => {
    expect(largeBodyBytes(req({ 'content-length': String(LARGE_BODY_BYTES - 1) }), cap(10 * LARGE_BODY_BYTES))).toBeUndefined();
    expect(largeBodyBytes(req({}), cap(10 * LARGE_BODY_BYTES))).toBeUndefined();
    expect(largeBodyBytes(req({ 'content-length': String(11 * LARGE_BODY_BYTES) }), cap(10 * LARGE_BODY_BYTES))).toBeUndefined();
    expect(largeBodyBytes(req({ 'content-length': 'x' }), cap(10 * LARGE_BODY_BYTES))).toBeUndefined();
  });
  it('is the cap for a chunked body (its size is known only at its end)', () => {
    expect(largeBodyBytes(req({ 'transfer-encoding': 'chunked' }), cap(10 * LARGE_BODY_BYTES))).toEqual({ bytes: LARGE_BODY_BYTES, chunked: true }); // real bytes counted as read, not the cap
    expect(largeBodyBytes(req({ 'transfer-encoding': 'chunked' }), cap(1024))).toBeUndefined();
  });
  it('asks for the cap only when the body may be large (a small submit never computes its route)', () => {
    const never = () => {
      throw new Error('the cap was asked for');
    };
    expect(largeBodyBytes(req({ 'content-length': '300' }), never)).toBeUndefined();
    expect(largeBodyBytes(req({}), never)).toBeUndefined();
  });
});
