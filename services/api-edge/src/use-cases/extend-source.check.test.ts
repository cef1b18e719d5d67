import { resolveModel, validateRequest, type NormalizedRequest, type TaskStatus } from '@gmg/contracts';
import type { TaskRecord } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import { checkExtendSource, extendSourceIdOf } from './extend-source.check';

const normalized = (body: Record<string, unknown>): NormalizedRequest => {
  const v = validateRequest(resolveModel(String(body.model))!, body, String(body.model));
  if (!v.ok) throw new Error(`fixture invalid: ${v.violation.message}`);
  return v.value;
};
const extend = (id: string, extra: Record<string, unknown> = {}) => normalized({ model: 'pixel-v6', prompt: 'go on', extend_from_task_id: id, ...extra });

const task = (id: string, accountId: string, model: string, status: TaskStatus) => ({ id, accountId, model, status }) as TaskRecord;
const store = (...rows: TaskRecord[]) => ({ tasks: { get: async (id: string) => rows.find((t) => t.id === id) ?? null } });

async function refusal(p: Promise<unknown>): Promise<DomainError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(err)}`);
  return err;
}

describe('checkExtendSource (pixel-v6 extend_from_task_id)', () => {
  const deps = store(
    task('task_mine', 'acc_a', 'pixel-v6', 'completed'),
    task('task_theirs', 'acc_b', 'pixel-v6', 'completed'),
    task('task_running', 'acc_a', 'pixel-v6', 'processing'),
    task('task_failed', 'acc_a', 'pixel-v6', 'failed'),
    task('task_image', 'acc_a', 'lumen-2-pro', 'completed'),
    task('task_omni', 'acc_a', 'Omni-Flash-Ext', 'completed'),
  );

  it('accepts a completed pixel-v6 task of the same account and returns it', async () => {
    await expect(checkExtendSource(deps, 'acc_a', extend('task_mine'))).resolves.toMatchObject({ id: 'task_mine' });
  });

  it('does nothing for a request without extend_from_task_id or for another model', async () => {
    await expect(checkExtendSource(deps, 'acc_a', normalized({ model: 'pixel-v6', prompt: 'p' }))).resolves.toBeUndefined();
    await expect(checkExtendSource(deps, 'acc_a', normalized({ model: 'lumen-2-pro', prompt: 'p' }))).resolves.toBeUndefined();
  });

  it("refuses another account's task with the very same message as a missing one (400 invalid_request_error)", async () => {
    const foreign = await refusal(checkExtendSource(deps, 'acc_a', extend('task_theirs')));
    const missing = await refusal(checkExtendSource(deps, 'acc_a', extend('task_nothere')));
    expect(foreign.code).toBe('invalid_request');
    expect(foreign.type).toBe('invalid_request_error');
    expect(foreign.details.field).toBe('extend_from_task_id');
    expect(foreign.message.replace('task_theirs', 'X')).toBe(missing.message.replace('task_nothere', 'X'));
  });

  it.each([
    ['an unfinished task', 'task_running', /is processing/],
    ['a failed task', 'task_failed', /is failed/],
    ['a non-video task', 'task_image', /lumen-2-pro task/],
    ['another video model', 'task_omni', /Omni-Flash-Ext task/],
  ])('refuses %s naming extend_from_task_id', async (_what, id, why) => {
    const err = await refusal(checkExtendSource(deps, 'acc_a', extend(id)));
    expect(err.message).toMatch(/^`extend_from_task_id`: /);
    expect(err.message).toMatch(why);
  });

  it('ignores the id when an earlier mode (image-to-video) wins: the contract does not send it upstream', async () => {
    const req = extend('task_theirs', { image_urls: ['https://example.com/a.png'] });
    expect(req.derived.mode).toBe('image-to-video');
    expect(req.upstreamBody).not.toHaveProperty('extend_from_task_id');
    expect(extendSourceIdOf(req)).toBeUndefined();
    await expect(checkExtendSource(deps, 'acc_a', req)).resolves.toBeUndefined();
  });
});
