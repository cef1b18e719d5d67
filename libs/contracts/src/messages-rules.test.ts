import { messagesBodyProblems } from './messages-rules';

/** One test per rule: a body the vendor takes passes, the same body broken in one way is refused by name. */

const call = (id: string) => ({ type: 'tool_use', id, name: 'weather', input: { city: 'Paris' } });
const result = (id: string) => ({ type: 'tool_result', tool_use_id: id, content: '12°C' });
const valid = () => ({
  model: 'lumen-chat-1',
  max_tokens: 64,
  system: [{ type: 'text', text: 'Be brief.' }],
  messages: [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, call('toolu_1')] },
    { role: 'user', content: [result('toolu_1'), { type: 'text', text: 'And tomorrow?' }] },
    { role: 'assistant', content: 'Mild.' },
  ],
  tools: [{ name: 'weather', input_schema: { type: 'object' } }],
  tool_choice: { type: 'auto' },
});
type Body = ReturnType<typeof valid> & Record<string, unknown>;
const broken = (change: (b: Body) => void): string[] => {
  const b = valid() as Body;
  change(b);
  return messagesBodyProblems(b);
};

describe('messagesBodyProblems (the messages vendor’s structural rules)', () => {
  it('takes a tool loop with a system prompt, text after the results, and consecutive same-role turns (the vendor merges them)', () => {
    expect(messagesBodyProblems(valid())).toEqual([]);
    expect(broken((b) => b.messages.splice(1, 0, { role: 'user', content: 'also' }))).toEqual([]);
    expect(broken((b) => b.messages.splice(3, 0, { role: 'user', content: 'one more thing' }))).toEqual([]);
  });

  it('refuses an empty string as a message content (the old translation of an empty user turn)', () => {
    expect(broken((b) => (b.messages[0].content = ''))).toEqual([
      'messages.0: all messages must have non-empty content except for the optional final assistant message',
    ]);
    // the final assistant message alone may be empty (a prefill)
    expect(broken((b) => (b.messages[3].content = ''))).toEqual([]);
  });

  it('refuses an empty text block (the old translation of `content: ""` beside tool_calls)', () => {
    expect(broken((b) => (b.messages[1].content = [{ type: 'text', text: '' }, call('toolu_1')]))).toEqual([
      'messages.1.content.0.text: text content blocks must be non-empty',
    ]);
    expect(broken((b) => (b.system = [{ type: 'text', text: '' }]))).toEqual(['system.0.text: text content blocks must be non-empty']);
    expect(broken((b) => (b.messages[2].content = [{ ...result('toolu_1'), content: [{ type: 'text', text: '' }] }] as never))).toEqual([
      'messages.2.content.0.content.0.text: text content blocks must be non-empty',
    ]);
  });

  it('refuses an empty content list', () => {
    expect(broken((b) => (b.messages[0].content = []))).toEqual([
      'messages.0: all messages must have non-empty content except for the optional final assistant message',
    ]);
  });

  it('refuses a conversation that does not open with the user', () => {
    expect(broken((b) => b.messages.splice(0, 1))).toContain('messages: first message must use the "user" role');
  });

  it('refuses a "system" message (system goes in the top-level field)', () => {
    expect(broken((b) => b.messages.unshift({ role: 'system', content: 'Be brief.' }))[0]).toMatch(/^messages\.0\.role: Unexpected role "system"/);
  });

  it('refuses a tool_use not answered at the start of the next user turn', () => {
    expect(broken((b) => (b.messages[2].content = [{ type: 'text', text: 'And tomorrow?' }, result('toolu_1')]))).toEqual([
      'messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
      'messages.2.content.1: tool_result blocks must come first in the content, before any other block (guess)',
    ]);
    expect(broken((b) => b.messages.splice(2))).toEqual([
      'messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
    ]);
  });

  it('refuses a tool_result whose id no tool_use of the previous turn has', () => {
    expect(broken((b) => (b.messages[2].content = [result('toolu_1'), result('toolu_9')]))).toEqual([
      'messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
    ]);
  });

  it('refuses tool blocks in the wrong role', () => {
    expect(broken((b) => (b.messages[0].content = [call('toolu_0')] as never))).toContain(
      'messages.0.content.0: tool_use blocks are only accepted in assistant messages (guess)',
    );
  });

  it('requires max_tokens', () => {
    expect(broken((b) => delete (b as Record<string, unknown>).max_tokens)).toEqual(['max_tokens: Field required']);
    expect(broken((b) => (b.max_tokens = 0))).toEqual(['max_tokens: must be an integer >= 1']);
  });

  it('refuses tool_choice without tools', () => {
    expect(broken((b) => delete (b as Record<string, unknown>).tools)).toEqual(['tool_choice: may only be specified while providing tools (guess)']);
  });

  it('refuses an image without data or url', () => {
    expect(broken((b) => (b.messages[0].content = [{ type: 'image', source: { type: 'base64', data: '***' } }] as never))).toEqual([
      'messages.0.content.0.source: an image needs base64 data or a url',
    ]);
  });
});
