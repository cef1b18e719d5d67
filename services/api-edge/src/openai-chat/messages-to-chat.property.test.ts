import fc from 'fast-check';
import { chatBodyProblem } from '@gmg/contracts';
import { DomainError } from '@gmg/errors';
import type { Json } from '../chat-completions/chat-messages';
import { parseChatRequest } from '../chat-completions/chat-request';
import { messageOfCompletion } from './chat-to-messages';
import { MessagesFromChatStream } from './chat-to-messages.stream';
import { chatBodyOfMessages } from './messages-to-chat';

/**
 * The messages → chat-completions direction (the `openai` channels), for random conversations (tool loops, images,
 * system prompts, empty strings): every translated body passes OpenAI's structural rules (chatBodyProblem, what the
 * strict simulator enforces), and translating it back (the chat-completions → messages translation of
 * /v1/chat/completions) gives the same turns, texts, images, tool calls and results, less what chat cannot carry
 * (empty text, the order of an assistant's text among its tool calls, the split of consecutive same-role turns);
 * and a streamed chat answer assembled from its translated events equals the translation of the whole answer.
 */

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const text = fc.string({ maxLength: 30 });
const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,15}$/);
const args = fc.dictionary(name, fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean()), { maxKeys: 3 });
const image = fc.constantFrom(
  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
  { type: 'image', source: { type: 'url', url: 'https://cdn.example.com/cat.png' } },
);
const userParts = fc.array(
  fc.oneof(
    text.map((t) => ({ type: 'text', text: t })),
    image,
  ),
  { minLength: 1, maxLength: 3 },
);
const user = fc.oneof(text, userParts).map((content) => [{ role: 'user', content }]);
const assistantText = fc
  .oneof(
    text,
    fc.array(
      text.map((t) => ({ type: 'text', text: t })),
      { minLength: 1, maxLength: 2 },
    ),
  )
  .map((content) => [{ role: 'assistant', content }]);
let seq = 0;
/** An assistant turn with tool calls (and maybe text), then the user turn answering every call first (maybe with more content). */
const toolLoop = fc
  .record({
    say: fc.option(text, { nil: undefined }),
    calls: fc.array(fc.record({ name, input: args }), { minLength: 1, maxLength: 3 }),
    results: fc.array(
      fc.oneof(
        text,
        fc.array(
          text.map((t) => ({ type: 'text', text: t })),
          { maxLength: 2 },
        ),
      ),
      { minLength: 3, maxLength: 3 },
    ),
    more: fc.option(userParts, { nil: undefined }),
  })
  .map(({ say, calls, results, more }) => {
    const ids = calls.map(() => `toolu_${++seq}`);
    const uses = calls.map((c, i) => ({ type: 'tool_use', id: ids[i], name: c.name, input: c.input }));
    return [
      { role: 'assistant', content: say === undefined ? uses : [{ type: 'text', text: say }, ...uses] },
      { role: 'user', content: [...ids.map((id, i) => ({ type: 'tool_result', tool_use_id: id, content: results[i] })), ...(more ?? [])] },
    ];
  });
const system = fc.option(
  fc.oneof(
    text,
    fc.array(
      text.map((t) => ({ type: 'text', text: t })),
      { minLength: 1, maxLength: 2 },
    ),
  ),
  { nil: undefined },
);
const conversation = fc.tuple(user, fc.array(fc.oneof(user, assistantText, toolLoop), { maxLength: 6 })).map(([u, rest]) => [...u, ...rest.flat()] as Json[]);
const tools = fc.array(fc.record({ name, description: text, input_schema: fc.constant({ type: 'object', properties: { city: { type: 'string' } } }) }), {
  maxLength: 3,
});

const blocks = (c: unknown): Json[] => (typeof c === 'string' ? [{ type: 'text', text: c }] : (c as Json[]));
const textOf = (c: unknown): string =>
  c === undefined
    ? ''
    : blocks(c)
        .map((b) => b.text as string)
        .join('\n');
const urlOf = (b: Json): string => {
  const s = b.source as Json;
  return s.type === 'url' ? (s.url as string) : `data:${String(s.media_type)};base64,${String(s.data)}`;
};

type Turn = { role: 'user'; results: Json[]; parts: Json[] } | { role: 'assistant'; text: string; calls: Json[] };

/**
 * What a messages conversation says, as chat can carry it: per role run (consecutive same-role turns are one turn
 * to the vendor), a user's tool results (id, text) and other parts (non-empty texts, image urls), an assistant's
 * text (its non-empty texts joined) and tool calls; turns with nothing left out.
 */
function said(messages: Json[]): Turn[] {
  const out: Turn[] = [];
  for (const m of messages) {
    const last = out[out.length - 1];
    if (m.role === 'user') {
      const turn = last?.role === 'user' ? last : { role: 'user' as const, results: [], parts: [] };
      for (const b of blocks(m.content)) {
        if (b.type === 'tool_result') turn.results.push({ id: b.tool_use_id, text: textOf(b.content) });
        else if (b.type === 'image') turn.parts.push({ image: urlOf(b) });
        else if (b.text !== '') turn.parts.push({ text: b.text });
      }
      if (turn !== last && (turn.results.length > 0 || turn.parts.length > 0)) out.push(turn);
    } else {
      const turn = last?.role === 'assistant' ? last : { role: 'assistant' as const, text: '', calls: [] };
      for (const b of blocks(m.content)) {
        if (b.type === 'tool_use') turn.calls.push({ id: b.id, name: b.name, input: b.input });
        else turn.text += b.text as string;
      }
      if (turn !== last && (turn.text !== '' || turn.calls.length > 0)) out.push(turn);
    }
  }
  return out;
}

describe('messages → chat-completions translation (property)', () => {
  it('translates random conversations to bodies OpenAI takes, and back without losing what chat carries', () => {
    fc.assert(
      fc.property(conversation, system, tools, fc.boolean(), (messages, sys, toolDefs, stream) => {
        const body: Json = { model: 'lumen-chat-1', max_tokens: 512, messages, stream };
        if (sys !== undefined) body.system = sys;
        if (toolDefs.length > 0) Object.assign(body, { tools: toolDefs, tool_choice: { type: 'auto' } });
        const t = chatBodyOfMessages(body, 'gpt-sim');
        const expected = said(messages);
        if ('problem' in t) {
          // only a conversation with nothing to send is not translated
          expect(expected).toEqual([]);
          return;
        }
        expect(chatBodyProblem(t.body)).toBeUndefined();
        const back = (() => {
          try {
            return parseChatRequest({ ...t.body, model: 'lumen-chat-1' }).body;
          } catch (e) {
            // the way back refuses a conversation whose first turn is the assistant's (the messages protocol needs the user's)
            expect(e).toBeInstanceOf(DomainError);
            expect(expected[0]?.role).toBe('assistant');
            return undefined;
          }
        })();
        if (!back) return;
        expect(said(back.messages as Json[])).toEqual(expected);
        const sysTexts = (blocks(sys ?? []) as Json[]).map((b) => b.text).filter((x) => x !== '');
        expect(((back.system as Json[] | undefined) ?? []).map((b) => b.text)).toEqual(sysTexts);
        expect(((back.tools as Json[] | undefined) ?? []).map((x) => [x.name, x.description, x.input_schema])).toEqual(
          toolDefs.map((x) => [x.name, x.description, x.input_schema]),
        );
        expect(back.max_tokens).toBe(512);
        expect(back.stream === true).toBe(stream);
      }),
      { numRuns: 300 },
    );
  });

  const answer = fc.record({
    content: fc.option(text, { nil: null }),
    calls: fc.array(fc.record({ name, input: args }), { maxLength: 3 }),
    finish: fc.constantFrom('stop', 'length', 'tool_calls', 'content_filter'),
    prompt: fc.nat(10_000),
    completion: fc.nat(10_000),
    cached: fc.nat(100),
  });

  it('a streamed chat answer, translated event by event, assembles into the translation of the whole answer', () => {
    fc.assert(
      fc.property(answer, fc.integer({ min: 1, max: 9 }), (a, cut) => {
        const usage = {
          prompt_tokens: a.prompt + a.cached,
          completion_tokens: a.completion,
          total_tokens: 0,
          prompt_tokens_details: { cached_tokens: a.cached },
        };
        const calls = a.calls.map((c, i) => ({ id: `call_${i}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } }));
        const whole = messageOfCompletion(
          {
            id: 'chatcmpl-1',
            object: 'chat.completion',
            choices: [
              { index: 0, message: { role: 'assistant', content: a.content, ...(calls.length ? { tool_calls: calls } : {}) }, finish_reason: a.finish },
            ],
            usage,
          },
          'lumen-chat-1',
        );
        const chunk = (delta: Json, finish: string | null = null) =>
          `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }], usage: null })}\n\n`;
        const events = [chunk({ role: 'assistant', content: '' })];
        for (let i = 0; i < (a.content ?? '').length; i += cut) events.push(chunk({ content: a.content!.slice(i, i + cut) }));
        for (const [index, c] of calls.entries()) {
          events.push(chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] }));
          for (let i = 0; i < c.function.arguments.length; i += cut)
            events.push(chunk({ tool_calls: [{ index, function: { arguments: c.function.arguments.slice(i, i + cut) } }] }));
        }
        events.push(
          chunk({}, a.finish),
          `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [], usage })}\n\n`,
          'data: [DONE]\n\n',
        );
        const t = new MessagesFromChatStream('lumen-chat-1');
        const out = events.map((e) => t.push(e)).join('');
        const parsed = out
          .split('\n\n')
          .filter((f) => f !== '')
          .map((f) => JSON.parse(f.split('\n')[1].slice(6)) as Json);
        // the order the messages clients expect
        const types = parsed.map((e) => e.type);
        expect(types[0]).toBe('message_start');
        expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
        const content: Json[] = [];
        let open = -1;
        for (const e of parsed.slice(1, -2)) {
          if (e.type === 'content_block_start') {
            expect(open).toBe(-1);
            open = e.index as number;
            expect(open).toBe(content.length);
            content.push({ ...(e.content_block as Json) });
          } else if (e.type === 'content_block_delta') {
            expect(e.index).toBe(open);
            const d = e.delta as Json;
            const b = content[open];
            if (d.type === 'text_delta') b.text = (b.text as string) + (d.text as string);
            else b.partial = ((b.partial as string | undefined) ?? '') + (d.partial_json as string);
          } else {
            expect(e).toEqual({ type: 'content_block_stop', index: open });
            open = -1;
          }
        }
        expect(open).toBe(-1);
        const assembled = content.map(({ partial, ...b }) =>
          b.type === 'tool_use' ? { ...b, input: JSON.parse((partial as string | undefined) || '{}') as unknown } : b,
        );
        expect(assembled).toEqual(whole.content);
        const delta = parsed[parsed.length - 2];
        expect((delta.delta as Json).stop_reason).toBe(whole.stop_reason);
        expect(delta.usage).toEqual(whole.usage);
      }),
      { numRuns: 200 },
    );
  });
});
