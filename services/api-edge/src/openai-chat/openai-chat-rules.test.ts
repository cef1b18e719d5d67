import { chatBodyProblem } from '@gmg/contracts';
import type { Json } from '../chat-completions/chat-messages';
import { chatBodyOfMessages } from './messages-to-chat';

/**
 * One test per rule of OpenAI's chat completions (libs/contracts chat-rules.ts, what the strict simulator enforces)
 * that the messages → chat-completions translation of `openai` channels must follow: the messages body a client
 * sends, its translation accepted by the strict check, and the body sent untranslated (or translated naively)
 * refused by the same check with the vendor's param and code, so each test fails if the rule is broken.
 */

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const weather = { name: 'weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } };
const loop: Json[] = [
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } }] },
  {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'toolu_1', content: '12°C' },
      { type: 'text', text: 'And tomorrow?' },
    ],
  },
];

function translated(body: Json): Json {
  const t = chatBodyOfMessages({ model: 'lumen-chat-1', max_tokens: 256, ...body }, 'gpt-sim');
  if ('problem' in t) throw new Error(`not translated: ${t.problem.field}`);
  expect(chatBodyProblem(t.body)).toBeUndefined();
  return t.body;
}

const refusal = (body: unknown) => {
  const p = chatBodyProblem(body);
  return p && { param: p.param, code: p.code };
};

describe('the messages → chat-completions translation follows OpenAI’s rules', () => {
  it('only the documented parameters: `system` becomes the first message (sent as it is, an unknown parameter)', () => {
    const b = translated({ system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] });
    expect((b.messages as Json[])[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(refusal({ model: 'gpt-sim', max_tokens: 256, system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] })).toEqual({
      param: 'system',
      code: 'unknown_parameter',
    });
  });

  it('stop sequences go as `stop` (`stop_sequences` is not a chat parameter)', () => {
    const b = translated({ stop_sequences: ['END'], messages: [{ role: 'user', content: 'Hi' }] });
    expect(b.stop).toEqual(['END']);
    expect(refusal({ model: 'gpt-sim', stop_sequences: ['END'], messages: [{ role: 'user', content: 'Hi' }] })).toEqual({
      param: 'stop_sequences',
      code: 'unknown_parameter',
    });
  });

  it('content parts of the types a user message takes: an image block becomes an image_url part', () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } };
    const b = translated({ messages: [{ role: 'user', content: [image, { type: 'text', text: 'What is it?' }] }] });
    expect((b.messages as Json[])[0].content).toEqual([
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
      { type: 'text', text: 'What is it?' },
    ]);
    expect(refusal({ model: 'gpt-sim', messages: [{ role: 'user', content: [image] }] })).toEqual({
      param: 'messages[0].content[0].type',
      code: 'invalid_value',
    });
  });

  it('tool calls as `tool_calls` of {id, type: function, function: {name, arguments}} with the arguments a string of JSON', () => {
    const b = translated({ tools: [weather], messages: loop });
    expect((b.messages as Json[])[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
    });
    // untranslated: a tool_use block is no assistant part type
    expect(refusal({ model: 'gpt-sim', messages: loop.slice(0, 2) })).toEqual({ param: 'messages[1].content[0].type', code: 'invalid_value' });
    // the arguments as an object (a naive copy of `input`)
    const naive = {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: { city: 'Paris' } } }],
    };
    expect(refusal({ model: 'gpt-sim', messages: [loop[0], naive, { role: 'tool', tool_call_id: 'toolu_1', content: '12°C' }] })).toEqual({
      param: 'messages[1].tool_calls[0].function',
      code: 'missing_required_parameter',
    });
  });

  it('an assistant turn with only tool calls has content null, never an empty array', () => {
    const b = translated({ tools: [weather], messages: loop });
    expect((b.messages as Json[])[1].content).toBeNull();
    const naive = { ...(b.messages as Json[])[1], content: [] };
    expect(refusal({ ...b, messages: [(b.messages as Json[])[0], naive, ...(b.messages as Json[]).slice(2)] })).toEqual({
      param: 'messages[1].content',
      code: 'empty_array',
    });
  });

  it('tool results as tool messages right after the assistant turn that called them, before the rest of the user turn', () => {
    const b = translated({ tools: [weather], messages: loop });
    expect((b.messages as Json[]).slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'toolu_1', content: '12°C' },
      { role: 'user', content: 'And tomorrow?' },
    ]);
    // untranslated: a tool_result block is no user part type
    expect(refusal({ model: 'gpt-sim', messages: loop })).toEqual({ param: 'messages[1].content[0].type', code: 'invalid_value' });
    // in the user turn's order (its text first): the tool message no longer follows the calls
    const naive = [
      ...(b.messages as Json[]).slice(0, 2),
      { role: 'user', content: 'And tomorrow?' },
      { role: 'tool', tool_call_id: 'toolu_1', content: '12°C' },
    ];
    expect(refusal({ ...b, messages: naive })).toEqual({ param: 'messages.[1].role', code: 'invalid_value' });
  });

  it('each tool message names the call it answers (`tool_call_id`, the tool_use id kept)', () => {
    const b = translated({ tools: [weather], messages: loop });
    expect((b.messages as Json[])[2].tool_call_id).toBe('toolu_1');
    const naive = [...(b.messages as Json[]).slice(0, 2), { role: 'tool', tool_use_id: 'toolu_1', content: '12°C' }];
    expect(refusal({ ...b, messages: naive })).toEqual({ param: 'messages[2].tool_call_id', code: 'missing_required_parameter' });
  });

  it('tools as {type: function, function: {name, description, parameters}}', () => {
    const b = translated({ tools: [weather], messages: [{ role: 'user', content: 'Hi' }] });
    expect(b.tools).toEqual([{ type: 'function', function: { name: 'weather', description: 'Weather of a city', parameters: weather.input_schema } }]);
    expect(refusal({ model: 'gpt-sim', tools: [weather], messages: [{ role: 'user', content: 'Hi' }] })).toEqual({
      param: 'tools[0].type',
      code: 'invalid_value',
    });
  });

  it('stream_options only on a stream', () => {
    expect(translated({ stream: true, messages: [{ role: 'user', content: 'Hi' }] }).stream_options).toEqual({ include_usage: true });
    const whole = translated({ messages: [{ role: 'user', content: 'Hi' }] });
    expect(whole.stream_options).toBeUndefined();
    expect(refusal({ ...whole, stream_options: { include_usage: true } })).toEqual({ param: 'stream_options', code: 'invalid_value' });
  });

  it('no roles chat does not know, no empty messages list: empty turns are left out, and a body of nothing is not sent', () => {
    const b = translated({
      messages: [
        { role: 'user', content: [{ type: 'text', text: '' }] },
        { role: 'assistant', content: [{ type: 'text', text: '' }] },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(b.messages).toEqual([{ role: 'user', content: 'Hi' }]);
    expect(chatBodyOfMessages({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: '' }] }, 'm')).toEqual({
      problem: { field: 'messages', message: expect.any(String) },
    });
    expect(refusal({ model: 'gpt-sim', messages: [] })).toEqual({ param: 'messages', code: 'empty_array' });
    expect(refusal({ model: 'gpt-sim', messages: [{ role: 'human', content: 'Hi' }] })).toEqual({ param: 'messages[0].role', code: 'invalid_value' });
  });
});
