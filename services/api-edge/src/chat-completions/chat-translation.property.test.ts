import fc from 'fast-check';
import { messagesBodyProblems } from '@gmg/contracts';
import { DomainError } from '@gmg/errors';
import { isObject, type Json } from './chat-messages';
import { parseChatRequest } from './chat-request';
import { assistantMessageOf, chatCompletionOf } from './chat-response';
import { ChatStreamTranslator } from './chat-stream.translator';

/**
 * For random conversations and tool definitions (tool loops, images, system prompts, empty strings), the translated
 * body passes the messages vendor's structural rules (messagesBodyProblems, what the strict simulator enforces),
 * and chat-completions → messages protocol → back gives the same roles, content and tool-call ids, less what
 * carries nothing (the way back of an assistant turn is the production answer translation); a streamed answer
 * assembled from its chunks equals the non-streamed translation of the same answer.
 */

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const text = fc.string({ maxLength: 40 });
const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,15}$/);
const args = fc.dictionary(name, fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean()), { maxKeys: 3 });
const part = fc.oneof(
  text.map((t) => ({ type: 'text', text: t })),
  fc.constantFrom(
    { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
    { type: 'image_url', image_url: { url: 'https://cdn.example.com/cat.png' } },
  ),
);
const user = fc.oneof(text, fc.array(part, { minLength: 1, maxLength: 3 })).map((content) => [{ role: 'user', content }]);
const assistantText = text.map((content) => [{ role: 'assistant', content }]);
/** An assistant turn that calls tools, then one tool message per call (ids unique in the conversation: see below). */
const toolTurn = fc
  .record({
    say: fc.option(text, { nil: null }),
    calls: fc.array(fc.record({ name, args }), { minLength: 1, maxLength: 3 }),
    results: fc.array(text, { minLength: 3, maxLength: 3 }),
  })
  .map(({ say, calls, results }) => {
    const ids = calls.map(() => `call_${Math.random().toString(36).slice(2)}`);
    return [
      {
        role: 'assistant',
        content: say,
        tool_calls: calls.map((c, i) => ({ id: ids[i], type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } })),
      },
      ...ids.map((id, i) => ({ role: 'tool', tool_call_id: id, content: results[i] })),
    ];
  });
const system = fc.array(fc.record({ role: fc.constantFrom('system', 'developer'), content: text }), { maxLength: 2 });
const conversation = fc
  .tuple(system, user, fc.array(fc.oneof(user, assistantText, toolTurn), { maxLength: 6 }))
  .map(([s, u, rest]) => [...s, ...u, ...rest.flat()] as Json[]);
const tools = fc.array(
  fc.record({
    type: fc.constant('function'),
    function: fc.record({ name, description: text, parameters: fc.constant({ type: 'object', properties: { city: { type: 'string' } } }) }),
  }),
  { maxLength: 3 },
);

/** The way back of a user turn: tool_result blocks → tool messages (no content reads as ''), images → image_url parts. */
function userBack(content: unknown): Json[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const blocks = content as Json[];
  if (blocks.every((b) => b.type === 'tool_result')) return blocks.map((b) => ({ role: 'tool', tool_call_id: b.tool_use_id, content: b.content ?? '' }));
  return [
    {
      role: 'user',
      content: blocks.map((b) => {
        if (b.type === 'text') return { type: 'text', text: b.text };
        const s = b.source as Json;
        return { type: 'image_url', image_url: { url: s.type === 'url' ? s.url : `data:${String(s.media_type)};base64,${String(s.data)}` } };
      }),
    },
  ];
}

/** What a chat message carries to the messages protocol: empty text parts and messages with nothing left go. */
function carried(m: Json): Json | undefined {
  if (m.role === 'system' || m.role === 'developer') return m.content === '' ? undefined : m;
  if (m.role === 'tool') return m;
  const parts = Array.isArray(m.content) ? (m.content as Json[]).filter((p) => !(p.type === 'text' && p.text === '')) : m.content;
  const kept = { ...m, content: parts };
  if (m.role === 'assistant') return parts || m.tool_calls ? kept : undefined;
  return parts === '' || (Array.isArray(parts) && parts.length === 0) ? undefined : kept;
}

function back(body: Json): Json[] {
  const out: Json[] = ((body.system as Json[] | undefined) ?? []).map((b) => ({ role: 'system', content: b.text }));
  for (const m of body.messages as Json[]) out.push(...(m.role === 'user' ? userBack(m.content) : [assistantMessageOf(m.content) as unknown as Json]));
  return out;
}

/** What the round trip keeps: developer reads as system, an assistant's text as one string, arguments as parsed JSON. */
function comparable(m: Json): Json {
  if (m.role === 'developer' || m.role === 'system') return { role: 'system', content: m.content };
  if (m.role !== 'assistant') return m;
  const calls = (m.tool_calls as Json[] | undefined)?.map((c) => {
    const f = c.function as Json;
    return { id: c.id, name: f.name, arguments: JSON.parse(f.arguments as string) as unknown };
  });
  // an assistant text that is empty next to tool calls carries nothing
  const content = m.content === null || (m.content === '' && calls) ? null : m.content;
  return { role: 'assistant', content, tool_calls: calls ?? [] };
}

describe('chat-completions ⇄ messages translation (property)', () => {
  it('translates random conversations to bodies the strict vendor takes, keeping roles, content and tool-call ids', () => {
    fc.assert(
      fc.property(conversation, tools, (messages, toolDefs) => {
        const chat = { model: 'lumen-chat-1', messages, tools: toolDefs, tool_choice: toolDefs.length ? 'auto' : undefined };
        const kept = messages.map(carried).filter((m): m is Json => m !== undefined);
        const first = kept.find((m) => m.role !== 'system' && m.role !== 'developer');
        if (first?.role !== 'user') {
          // nothing or an assistant turn left in front: a 400 naming the messages, never a body the vendor refuses
          expect(() => parseChatRequest(chat)).toThrow(DomainError);
          return;
        }
        const req = parseChatRequest(chat);
        expect(messagesBodyProblems(req.body)).toEqual([]);
        expect(back(req.body).map(comparable)).toEqual(kept.map(comparable));
        const sent = (req.body.tools as Json[] | undefined) ?? [];
        expect(sent.map((t) => [t.name, t.description, t.input_schema])).toEqual(
          toolDefs.map((t) => [t.function.name, t.function.description, t.function.parameters]),
        );
      }),
      { numRuns: 300 },
    );
  });

  const block = fc.oneof(
    text.map((t) => ({ type: 'text', text: t })),
    fc.record({ name, input: args }).map(({ name: n, input }) => ({ type: 'tool_use', id: `toolu_${Math.random().toString(36).slice(2)}`, name: n, input })),
  );
  const answer = fc.record({
    blocks: fc.array(block, { minLength: 1, maxLength: 4 }),
    stop: fc.constantFrom('end_turn', 'max_tokens', 'tool_use', 'stop_sequence', 'pause_turn', 'refusal', 'model_context_window_exceeded'),
    input: fc.nat(10_000),
    output: fc.nat(10_000),
    cacheRead: fc.nat(100),
  });

  it('a streamed answer assembled from its chunks equals the non-streamed translation, usage included', () => {
    fc.assert(
      fc.property(answer, fc.integer({ min: 1, max: 9 }), (a, cut) => {
        const usage = { input_tokens: a.input, output_tokens: a.output, cache_creation_input_tokens: 0, cache_read_input_tokens: a.cacheRead };
        const msg = { id: 'msg_1', type: 'message', role: 'assistant', content: a.blocks, stop_reason: a.stop, usage };
        const ctx = { model: 'lumen-chat-1', created: 1_700_000_000 };
        const whole = chatCompletionOf(msg, ctx);

        const t = new ChatStreamTranslator({ ...ctx, includeUsage: true });
        const sse = (type: string, data: Json) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
        const events = [sse('message_start', { message: { ...msg, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } }), sse('ping', {})];
        for (const [index, b] of a.blocks.entries()) {
          events.push(sse('content_block_start', { index, content_block: b.type === 'text' ? { type: 'text', text: '' } : { ...b, input: {} } }));
          // a tool without parameters streams no input at all (the vendor may send one empty delta)
          const input = (b as { input?: Json }).input;
          const payload = b.type === 'text' ? (b as { text: string }).text : input && Object.keys(input).length === 0 ? '' : JSON.stringify(input);
          for (let i = 0; i < payload.length; i += cut) {
            const piece = payload.slice(i, i + cut);
            events.push(
              sse('content_block_delta', {
                index,
                delta: b.type === 'text' ? { type: 'text_delta', text: piece } : { type: 'input_json_delta', partial_json: piece },
              }),
            );
          }
          events.push(sse('content_block_stop', { index }));
        }
        events.push(sse('message_delta', { delta: { stop_reason: a.stop }, usage: { output_tokens: a.output } }), sse('message_stop', {}));
        // one upstream event in, its chunks out
        const out = events.map((e) => t.push(e)).join('');
        expect(out.endsWith('data: [DONE]\n\n')).toBe(true);
        expect(t.done).toBe(true);
        const chunks = out
          .split('\n\n')
          .filter((f) => f.startsWith('data: {'))
          .map((f) => JSON.parse(f.slice(6)) as Json);

        let content: string | null = null;
        const calls: Json[] = [];
        let finish: unknown = null;
        let finalUsage: unknown;
        for (const c of chunks) {
          expect(c).toMatchObject({ id: whole.id, object: 'chat.completion.chunk', model: 'lumen-chat-1' });
          if (isObject(c.usage)) finalUsage = c.usage;
          for (const ch of c.choices as Json[]) {
            const d = ch.delta as Json;
            if (typeof d.content === 'string' && (d.content !== '' || content !== null)) content = (content ?? '') + d.content;
            for (const tc of (d.tool_calls as Json[] | undefined) ?? []) {
              const f = tc.function as Json;
              const i = tc.index as number;
              if (!calls[i]) calls[i] = { id: tc.id, type: 'function', function: { name: f.name, arguments: '' } };
              const fn = calls[i].function as Json;
              fn.arguments = (fn.arguments as string) + (f.arguments as string);
            }
            if (ch.finish_reason) finish = ch.finish_reason;
          }
        }
        const choice = (whole.choices as Json[])[0];
        const expected = choice.message as Json;
        // a text part of '' is content '' in the whole answer, and nothing at all in a stream
        expect(content ?? null).toEqual(expected.content === '' ? null : expected.content);
        expect(calls).toEqual(expected.tool_calls ?? []);
        expect(finish).toBe(choice.finish_reason);
        expect(finalUsage).toEqual(whole.usage);
      }),
      { numRuns: 200 },
    );
  });
});
