import { resolveModel } from '../index';

describe('a contract violation on a hostile value', () => {
  it('answers 400 naming the field for a value nested 100,000 deep (rendering it must not overflow the stack)', () => {
    const depth = 100_000;
    const body = JSON.parse(`{"model":"lumen-2-flex","prompt":"x","size":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`) as unknown;
    const r = resolveModel('lumen-2-flex')!.contract!.validate(body, 'lumen-2-flex');
    expect(r.ok).toBe(false);
    if (!r.ok) expect([r.violation.status, r.violation.field, r.violation.rule]).toEqual([400, 'size', 'type']);
  });
});
