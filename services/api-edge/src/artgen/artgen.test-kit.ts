import request from 'supertest';
import type { EdgeHarness } from '../edge.test-kit';

/**
 * Test helper (not a test file itself): the art-suite calls the route tests make through the edge harness `harness()`
 * (read at call time: the harness starts in beforeAll). `submitted` asserts the art acknowledgement and returns the task id.
 */
export function artgenCalls(harness: () => EdgeHarness) {
  const post = (key: string, path: string, body: unknown) =>
    request(harness().baseUrl)
      .post(path)
      .set('Authorization', `Bearer ${key}`)
      .send(body as object);
  const submitted = async (key: string, path: string, body: unknown): Promise<string> => {
    const res = await post(key, path, body);
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { code: 200, data: { status: 'SUBMITTED' } } });
    return res.body.data.task_id as string;
  };
  return { post, submitted };
}
