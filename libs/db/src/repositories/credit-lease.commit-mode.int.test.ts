import { createTestDatabase, type TestDatabase } from '@gmg/testing';

/**
 * The chat call's two statements are functions (migration 1765760000000-chat-call-functions): the open row commits
 * asynchronously, for its own transaction only (docs/messages.md, "What a crash costs": no money moves
 * asynchronously), and the record — which moves money — synchronously.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/** `synchronous_commit` inside a transaction that ran `statement`, and on the same connection after it. */
async function commitModeOf(statement: string): Promise<{ inside: string; after: string }> {
  const qr = db.dataSource.createQueryRunner();
  await qr.connect();
  try {
    const mode = async () => ((await qr.query('SHOW synchronous_commit')) as Array<{ synchronous_commit: string }>)[0].synchronous_commit;
    await qr.query('BEGIN');
    await qr.query(statement);
    const inside = await mode();
    await qr.query('COMMIT');
    return { inside, after: await mode() };
  } finally {
    await qr.release();
  }
}

it('the open-row function commits its own transaction asynchronously; the record function synchronously', async () => {
  expect(await commitModeOf(`SELECT * FROM gmg_open_chat_calls('lease_none', '[]'::jsonb)`)).toEqual({ inside: 'off', after: 'on' });
  expect(await commitModeOf(`SELECT * FROM gmg_record_chat_calls('lease_none', '[]'::jsonb)`)).toEqual({ inside: 'on', after: 'on' });
});
