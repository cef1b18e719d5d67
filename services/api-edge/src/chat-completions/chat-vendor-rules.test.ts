import { messagesBodyProblems } from '@gmg/contracts';
import { DomainError } from '@gmg/errors';
import { type Json } from './chat-messages';
import { parseChatRequest } from './chat-request';
import { ChatStreamTranslator } from './chat-stream.translator';

/**
 * One test per rule of the messages vendor that the translation must follow: the chat request a real client sends,
 * its translation accepted by the strict check, and the body the translation used to send (the untranslated or
 * naively translated form) refused by the same check, so each test fails if the rule is broken again.
 */

const call = (id: string, args = '{"city":"Paris"}') => ({ id, type: 'function', function: { name: 'weather', arguments: args } });
const tools = [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
const body = (messages: Json[], extra: Json = {}) => parseChatRequest({ model: 'lumen-chat-1', messages, tools, ...extra }).body;

function rejection(messages: Json[], extra: Json = {}): [unknown, unknown] {
  try {
    parseChatRequest({ model: 'lumen-chat-1', messages, ...extra });
  } catch (e) {
    if (e instanceof DomainError) return [e.details.field, e.details.rule];
    throw e;
  }
  throw new Error('accepted');
}

describe('the chat translation follows the messages vendor’s rules', () => {
  it('an assistant turn with content "" and tool_calls (the openai client’s tool loop) becomes tool_use blocks only', () => {
    const loop = [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: '', tool_calls: [call('call_1')] },
      { role: 'tool', tool_call_id: 'call_1', content: '12°C' },
    ];
    const b = body(loop);
    expect((b.messages as Json[])[1]).toEqual({ role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } }] });
    expect(messagesBodyProblems(b)).toEqual([]);
    // what the translation sent before: an empty text block first
    const old = {
      ...b,
      messages: [
        (b.messages as Json[])[0],
        { role: 'assistant', content: [{ type: 'text', text: '' }, ...((b.messages as Json[])[1].content as Json[])] },
        (b.messages as Json[])[2],
      ],
    };
    expect(messagesBodyProblems(old)).toEqual(['messages.1.content.0.text: text content blocks must be non-empty']);
  });

  it('leaves out empty text: an empty user turn, empty parts, empty system text, an empty tool result', () => {
    const b = body([
      { role: 'system', content: '' },
      {
        role: 'user',
        content: [
          { type: 'text', text: '' },
          { type: 'text', text: 'Hi' },
        ],
      },
      { role: 'assistant', content: null, tool_calls: [call('call_1', '')] },
      { role: 'tool', tool_call_id: 'call_1', content: '' },
      { role: 'user', content: '' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'Go on' },
    ]);
    expect(b.system).toBeUndefined();
    expect(b.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'weather', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1' }] },
      { role: 'user', content: 'Go on' },
    ]);
    expect(messagesBodyProblems(b)).toEqual([]);
    // untranslated: the empty user turn kept
    expect(messagesBodyProblems({ ...b, messages: [...(b.messages as Json[]), { role: 'user', content: '' }] })).toEqual([
      'messages.4: all messages must have non-empty content except for the optional final assistant message',
    ]);
  });

  it('refuses a tool message that answers no call of the assistant message right before it (400 naming it)', () => {
    expect(
      rejection([
        { role: 'user', content: 'hi' },
        { role: 'tool', tool_call_id: 'call_9', content: 'x' },
      ]),
    ).toEqual(['messages[1].tool_call_id', 'tool_results']);
    expect(
      rejection([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, tool_calls: [call('call_1')] },
        { role: 'tool', tool_call_id: 'call_1', content: 'x' },
        { role: 'tool', tool_call_id: 'call_1', content: 'again' },
      ]),
    ).toEqual(['messages[3].tool_call_id', 'tool_results']);
    // the naive form: a tool_result after a user turn
    expect(
      messagesBodyProblems({
        model: 'm',
        max_tokens: 9,
        messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_9', content: 'x' }] }],
      }),
    ).toEqual([
      'messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: call_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
    ]);
  });

  it('refuses a tool call left unanswered (400 naming the assistant message’s tool_calls)', () => {
    const unanswered = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [call('call_1'), call('call_2')] },
      { role: 'tool', tool_call_id: 'call_1', content: 'x' },
      { role: 'user', content: 'and?' },
    ];
    expect(rejection(unanswered)).toEqual(['messages[1].tool_calls', 'tool_results']);
    expect(rejection(unanswered.slice(0, 2))).toEqual(['messages[1].tool_calls', 'tool_results']);
  });

  it('refuses a conversation whose first message after the system ones is not the user’s', () => {
    expect(
      rejection([
        { role: 'system', content: 's' },
        { role: 'assistant', content: 'Hello!' },
        { role: 'user', content: 'hi' },
      ]),
    ).toEqual(['messages[1].role', 'first_message']);
    expect(messagesBodyProblems({ model: 'm', max_tokens: 9, messages: [{ role: 'assistant', content: 'Hello!' }] })).toEqual([
      'messages: first message must use the "user" role',
    ]);
  });

  it('puts system and developer messages in the top-level system, never as a message', () => {
    const b = body([
      { role: 'user', content: 'hi' },
      { role: 'developer', content: 'be brief' },
    ]);
    expect([b.system, b.messages]).toEqual([[{ type: 'text', text: 'be brief' }], [{ role: 'user', content: 'hi' }]]);
    expect(messagesBodyProblems({ ...b, messages: [{ role: 'system', content: 'be brief' }, ...(b.messages as Json[])] })[0]).toMatch(
      /Unexpected role "system"/,
    );
  });

  it('always sends max_tokens', () => {
    const b = body([{ role: 'user', content: 'hi' }]);
    expect(b.max_tokens).toBe(4096);
    const { max_tokens: _, ...without } = b;
    expect(messagesBodyProblems(without)).toEqual(['max_tokens: Field required']);
  });

  it('answers tool_choice without tools with a 400 naming tool_choice', () => {
    expect(rejection([{ role: 'user', content: 'hi' }], { tool_choice: 'auto' })).toEqual(['tool_choice', 'requires_tools']);
    expect(rejection([{ role: 'user', content: 'hi' }], { tool_choice: 'none', tools: [] })).toEqual(['tool_choice', 'requires_tools']);
    expect(messagesBodyProblems({ model: 'm', max_tokens: 9, messages: [{ role: 'user', content: 'hi' }], tool_choice: { type: 'auto' } })).toEqual([
      'tool_choice: may only be specified while providing tools (guess)',
    ]);
  });

  it('a streamed call of a tool without parameters assembles to the whole answer’s arguments ("{}")', () => {
    const t = new ChatStreamTranslator({ model: 'm', created: 1, includeUsage: false });
    const sse = (type: string, data: Json) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    const out = [
      sse('message_start', { message: { id: 'msg_1', usage: { input_tokens: 3 } } }),
      sse('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'now', input: {} } }),
      sse('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '' } }),
      sse('content_block_stop', { index: 0 }),
      sse('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 5 } }),
      sse('message_stop', {}),
    ]
      .map((e) => t.push(e))
      .join('');
    const args = out
      .split('\n\n')
      .filter((f) => f.startsWith('data: {'))
      .flatMap((f) => (((JSON.parse(f.slice(6)) as Json).choices as Json[])[0]?.delta as Json | undefined)?.tool_calls ?? [])
      .map((c) => (c as { function: { arguments?: string } }).function.arguments ?? '')
      .join('');
    expect(args).toBe('{}');
  });
});
