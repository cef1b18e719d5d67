import { listenVendorSim, type VendorSim } from '../vendor-sim.test-kit';

/**
 * The simulator's strict chat-completions mode (`/openai/v1/chat/completions`) over real HTTP: a body OpenAI would
 * refuse gets OpenAI's 400 and error shape (`{error: {message, type, param, code}}`, naming the rule's param),
 * the key is checked, and an accepted body gets a deterministic answer, whole or streamed (the usage chunk only
 * under `stream_options.include_usage`).
 */
const KEY = 'sk-openai-sim-chat-0042';
let sim: VendorSim;
beforeAll(async () => {
  sim = await listenVendorSim('openai', { apiKey: KEY, now: Date.now });
});
afterAll(() => sim.close());

const post = (body: unknown, key = KEY) =>
  fetch(`${sim.origin}/openai/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });

describe('the strict chat-completions mode', () => {
  it.each([
    ['an unknown parameter', { model: 'm', system: 'x', messages: [{ role: 'user', content: 'Hi' }] }, 'system', 'unknown_parameter'],
    ['an unknown role', { model: 'm', messages: [{ role: 'human', content: 'Hi' }] }, 'messages[0].role', 'invalid_value'],
    [
      'a content part type the role does not take',
      { model: 'm', messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a' }] }] },
      'messages[0].content[0].type',
      'invalid_value',
    ],
    [
      'a tool message that follows no tool call',
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'tool', tool_call_id: 'call_1', content: 'x' },
        ],
      },
      'messages.[1].role',
      'invalid_value',
    ],
    [
      'a tool call left unanswered',
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
          { role: 'user', content: 'and?' },
        ],
      },
      'messages.[1].role',
      'invalid_value',
    ],
    [
      'stream_options without a stream',
      { model: 'm', stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Hi' }] },
      'stream_options',
      'invalid_value',
    ],
    ['an empty messages list', { model: 'm', messages: [] }, 'messages', 'empty_array'],
  ])('%s: OpenAI’s 400 naming the param', async (_what, body, param, code) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    const err = ((await res.json()) as { error: Record<string, unknown> }).error;
    expect(err).toEqual({ message: expect.any(String), type: 'invalid_request_error', param, code });
  });

  it('a wrong key: 401 invalid_api_key, the key never echoed', async () => {
    const res = await post({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] }, 'sk-wrong-key-123');
    expect(res.status).toBe(401);
    const text = await res.text();
    expect(text).toContain('invalid_api_key');
    expect(text).not.toContain('sk-wrong-key-123');
  });

  it('a stream: chunks then [DONE]; the usage chunk only when asked', async () => {
    for (const includeUsage of [false, true]) {
      const res = await post({
        model: 'm',
        stream: true,
        ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
        messages: [{ role: 'user', content: 'Hi you' }],
      });
      expect(res.status).toBe(200);
      const frames = (await res.text()).split('\n\n').filter((f) => f !== '');
      expect(frames.at(-1)).toBe('data: [DONE]');
      const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.slice(6)) as { choices: Array<{ delta: { content?: string } }>; usage?: unknown });
      expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello! You said: Hi you');
      expect(chunks.some((c) => c.choices.length === 0 && c.usage)).toBe(includeUsage);
    }
  });
});
