import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '@gmg/testing';
import { resolveModel, validateRequest, type NormalizedRequest } from '@gmg/contracts';
import { AccountRepository } from './account.repository';
import { ApiKeyRepository } from './api-key.repository';
import { TaskRepository } from './task.repository';
import { rowsOf, type Row } from './sql';
import { newTaskId } from '../ids';

/** What a poll may read from Postgres (issue 11 item 2): the row a poll reads, measured by Postgres itself. */
const POLL_READ_LIMIT = 2048;

/** A DataSource that remembers the last statement and its parameters (the repository's own SQL is measured). */
function recording(ds: DataSource) {
  const seen: Array<{ sql: string; params: unknown[] }> = [];
  return { seen, ds: { query: (sql: string, params?: unknown[]) => (seen.push({ sql, params: params ?? [] }), ds.query(sql, params)) } };
}

/** lumen-2-pro with 8 inline Base64 references of 48 KiB each, validated by the real contract. */
function requestWithEightReferences(): NormalizedRequest {
  const body = { model: 'lumen-2-pro', prompt: 'a red fox in snow', image_urls: Array.from({ length: 8 }, () => randomBytes(48 * 1024).toString('base64')) };
  const out = validateRequest(resolveModel('lumen-2-pro')!, body, 'lumen-2-pro');
  if (!out.ok) throw new Error(out.violation.message);
  return out.value;
}

describe('task reads never carry the request body', () => {
  let db: TestDatabase;
  let taskId: string;

  /** Bytes of the rows one repository statement reads or returns, as Postgres sizes them (detoasted). */
  const bytesRead = async ({ sql, params }: { sql: string; params: unknown[] }): Promise<number> => {
    const wrapped = /^\s*(UPDATE|WITH)/i.test(sql)
      ? `WITH r AS (${sql}) SELECT COALESCE(sum(pg_column_size(r.*)), 0)::int AS bytes FROM r`
      : `SELECT COALESCE(sum(pg_column_size(r.*)), 0)::int AS bytes FROM (${sql}) r`;
    const [row] = rowsOf(await db.dataSource.query(wrapped, params));
    return Number(row.bytes);
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    const accounts = new AccountRepository(db.dataSource);
    const accountId = (await accounts.create({ name: 'poll-size' })).id;
    await accounts.topup(accountId, 1_000_000n);
    const keyId = (await new ApiKeyRepository(db.dataSource).create({ accountId })).key.id;
    taskId = newTaskId();
    await new TaskRepository(db.dataSource).createWithHold({
      id: taskId,
      accountId,
      apiKeyId: keyId,
      model: 'lumen-2-pro',
      requestedModel: 'lumen-2-pro',
      pool: 'image',
      request: requestWithEightReferences(),
      price: 100n,
      priceSnapshot: { total: '100' },
      deadlineAt: new Date(Date.now() + 60_000),
    });
  }, 60_000);
  afterAll(async () => db?.drop());

  it('the stored request of a task with 8 Base64 references is large (what a poll must not read)', async () => {
    const whole = await bytesRead({ sql: `SELECT * FROM tasks WHERE id = $1`, params: [taskId] });
    expect(whole).toBeGreaterThan(8 * 48 * 1024);
  });

  it(`a poll (TaskRepository.get) of that task reads under ${POLL_READ_LIMIT} bytes, and its plan outputs no request column`, async () => {
    const rec = recording(db.dataSource);
    const task = await new TaskRepository(rec.ds).get(taskId);
    expect(task?.request.derived).toBeDefined();
    expect(task?.request.upstreamBody).toEqual({});
    const poll = rec.seen[0];
    const bytes = await bytesRead(poll);
    expect(bytes).toBeLessThan(POLL_READ_LIMIT);

    const plan = ((await db.dataSource.query(`EXPLAIN (ANALYZE, BUFFERS, VERBOSE) ${poll.sql}`, poll.params)) as Row[]).map((r) => String(r['QUERY PLAN']));
    const outputs = plan.filter((l) => l.trim().startsWith('Output:'));
    expect(outputs.length).toBeGreaterThan(0);
    for (const l of outputs) expect(l).not.toMatch(/\brequest\b/);
  });

  it('the step transitions return only the summary columns too', async () => {
    const rec = recording(db.dataSource);
    const tasks = new TaskRepository(rec.ds);
    expect(await tasks.updateProgress(taskId, 1)).not.toBeNull();
    // re-run by the measurement with a higher progress, so it returns its row again
    const bytes = await bytesRead({ ...rec.seen[0], params: [taskId, 2] });
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThan(POLL_READ_LIMIT);
  });

  it('the submit step alone reads the whole request', async () => {
    const request = await new TaskRepository(db.dataSource).getRequest(taskId);
    expect(request?.upstreamBody.image_urls).toHaveLength(8);
  });
});
