import request from 'supertest';
import { createSimApp } from '../app';
import { testModels } from '../test-models.test-kit';

/**
 * The simulator's messages mode is as strict as its vendor: a body that breaks one of the vendor's structural rules
 * is a 400 in the vendor's error shape naming what is wrong (the rules: libs/contracts/src/messages-rules.ts).
 */
describe('upstream-sim messages mode refuses what the vendor refuses', () => {
  const app = createSimApp({ timeScale: 0.05, publicUrl: 'http://sim.test:9090', models: testModels });
  const post = (body: unknown) =>
    request(app)
      .post('/v1/messages')
      .set('anthropic-version', '2023-06-01')
      .send(body as object);
  const ok = { model: 'lumen-chat-1', max_tokens: 32, messages: [{ role: 'user', content: 'Hello' }] };

  it('answers a valid body', async () => {
    const res = await post(ok);
    expect([res.status, res.body.type, res.body.role]).toEqual([200, 'message', 'assistant']);
  });

  it.each([
    [
      'an empty text block',
      { ...ok, messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] },
      'messages.0.content.0.text: text content blocks must be non-empty',
    ],
    ['an empty string content', { ...ok, messages: [{ role: 'user', content: '' }] }, 'messages.0: all messages must have non-empty content'],
    ['an assistant first', { ...ok, messages: [{ role: 'assistant', content: 'Hi' }] }, 'messages: first message must use the "user" role'],
    ['a system message', { ...ok, messages: [{ role: 'system', content: 'Be brief' }, ...ok.messages] }, 'messages.0.role: Unexpected role "system"'],
    [
      'a tool_use left unanswered',
      {
        ...ok,
        messages: [
          ...ok.messages,
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] },
          { role: 'user', content: 'and?' },
        ],
      },
      'messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1',
    ],
    [
      'a tool_result with no tool_use before it',
      { ...ok, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'x' }] }] },
      'messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9',
    ],
    ['no max_tokens', { model: 'lumen-chat-1', messages: ok.messages }, 'max_tokens: Field required'],
  ])('refuses %s with the vendor’s 400', async (_name, body, message) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(res.body.error.message).toContain(message);
  });
});
