import type { TaskRecord } from '@gmg/db';
import { TASK_ANSWER_SHAPES } from './task-answer.shapes';

const task = (over: Partial<TaskRecord> = {}): TaskRecord =>
  ({
    id: 'task_0123456789abcdefghijKLMN',
    apiKeyId: 'key',
    requestId: 'req_00000000000000000000000000000001',
    traceId: null,
    request: {
      model: 'artgen',
      requestedModel: 'artgen',
      pool: 'artgen',
      upstreamBody: {},
      derived: { action: 'upscale' },
      expected: { kind: 'images', count: 1 },
    },
    ...over,
  }) as TaskRecord;

const text = (a: { body: Buffer }) => a.body.toString('utf8');

/**
 * The stored references of the last 24 h are rebuilt with these functions after a release, so their bytes are
 * pinned here: a change to an acknowledgement's layout fails this test — give the new layout a new shape name.
 */
describe('TASK_ANSWER_SHAPES (bytes pinned: references stored before a release are rebuilt after it)', () => {
  it('A: shape A with the JSON Content-Type', () => {
    const a = TASK_ANSWER_SHAPES.A(task());
    expect([a.status, a.headers, text(a)]).toEqual([
      200,
      { 'content-type': 'application/json; charset=utf-8' },
      '{"code":200,"data":[{"status":"submitted","task_id":"task_0123456789abcdefghijKLMN"}]}',
    ]);
  });

  it('B: shape B with the request id kept on the task and the response version of the reference', () => {
    const a = TASK_ANSWER_SHAPES.B(task(), '2026-07-27');
    expect([a.status, a.headers, text(a)]).toEqual([
      202,
      { 'x-service-response-version': '2026-07-27', 'content-type': 'application/json; charset=utf-8' },
      '{"code":202,"request_id":"req_00000000000000000000000000000001","data":{"id":"task_0123456789abcdefghijKLMN","object":"generation.task",' +
        '"type":"image","status":"pending","progress":0,"poll_url":"/v1/tasks/task_0123456789abcdefghijKLMN"}}',
    ]);
  });

  it('C: the avatar acknowledgement', () => {
    expect(text(TASK_ANSWER_SHAPES.C(task()))).toBe(
      '{"code":200,"data":{"id":"task_0123456789abcdefghijKLMN","object":"motion.avatar.asset.task","status":"processing","progress":0,"model":"motion-2.0"}}',
    );
  });

  it("G: the art suite acknowledgement names the task's own action; a task without one cannot be rebuilt", () => {
    expect(text(TASK_ANSWER_SHAPES.G(task()))).toBe('{"code":200,"data":{"task_id":"task_0123456789abcdefghijKLMN","action":"UPSCALE","status":"SUBMITTED"}}');
    expect(() => TASK_ANSWER_SHAPES.G(task({ request: { ...task().request, derived: {} } }))).toThrow(/no art suite action/);
  });

  it("puts the task's trace id first, as the trace middleware sets X-Trace-Id before anything else", () => {
    expect(Object.keys(TASK_ANSWER_SHAPES.B(task({ traceId: 'f'.repeat(32) }), '2026-07-27').headers)).toEqual([
      'x-trace-id',
      'x-service-response-version',
      'content-type',
    ]);
  });
});
