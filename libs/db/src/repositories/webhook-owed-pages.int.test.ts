import { createTestDatabase, seedVolume, type TestDatabase } from '@gmg/testing';
import { WebhookRepository } from './webhook.repository';

/**
 * owedIds pages in (completed_at, id) order along tasks_callback_completed_idx: walking it page by page after the
 * last id gives every owed webhook of the window exactly once, ties on completed_at included. (That a page is a
 * range scan of the index is a plan at volume: scripts/explain-volume.ts.)
 */
describe('owed webhooks, page by page (WebhookRepository.owedIds)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await seedVolume(db.dataSource, { tasks: 6000, ledger: 12_500, accounts: 5, days: 2 });
    // of the callback tasks of the last day, every third has lost its delivery record: owed; a few share one instant
    await db.dataSource.query(
      `DELETE FROM webhook_deliveries d USING tasks t WHERE t.id = d.task_id AND t.completed_at > now() - interval '1 day' AND (hashtext(t.id) % 3) = 0`,
    );
    await db.dataSource.query(`UPDATE tasks SET completed_at = date_trunc('second', completed_at)
      WHERE id IN (SELECT id FROM tasks WHERE callback_url IS NOT NULL AND settled_at IS NOT NULL ORDER BY id DESC LIMIT 40)`);
    await db.dataSource.query('ANALYZE tasks');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('every owed webhook once, in pages of 7, ties included', async () => {
    const repo = new WebhookRepository(db.dataSource);
    const all = await repo.owedIds(0, 86_400_000, 100_000);
    expect(all.length).toBeGreaterThan(30);
    const walked: string[] = [];
    let after: string | undefined;
    for (let i = 0; i < 1000; i++) {
      const page = await repo.owedIds(0, 86_400_000, 7, after);
      walked.push(...page.map((p) => p.id));
      if (page.length < 7) break;
      after = page[page.length - 1]!.id;
    }
    expect(walked).toEqual(all.map((a) => a.id));
    expect(new Set(walked).size).toBe(walked.length);
  });
});
