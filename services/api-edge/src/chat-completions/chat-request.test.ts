import { DomainError } from '@gmg/errors';
import { DEFAULT_MAX_TOKENS, parseChatRequest } from './chat-request';
import { chatErrorOfUpstream, finishReasonOf, usageOf } from './chat-response';

const base = { model: 'lumen-chat-1', messages: [{ role: 'user', content: 'hi' }] };

function rejection(body: unknown): DomainError {
  try {
    parseChatRequest(body);
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error('accepted');
}

describe('parseChatRequest', () => {
  it('maps the sampling, length, stop, tool and user fields to the messages protocol', () => {
    const r = parseChatRequest({
      ...base,
      max_tokens: 10,
      max_completion_tokens: 20,
      temperature: 0.3,
      top_p: 0.9,
      stop: 'END',
      user: 'u-7',
      stream: true,
      stream_options: { include_usage: true },
      parallel_tool_calls: false,
      tool_choice: { type: 'function', function: { name: 'f' } },
      tools: [{ type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object', properties: { a: { type: 'string' } } } } }],
      n: 1,
      logprobs: false,
      presence_penalty: 0.5,
      messages: [{ role: 'developer', content: 'be brief' }, { role: 'system', content: [{ type: 'text', text: 'and kind' }] }, ...base.messages],
    });
    expect(r).toMatchObject({ model: 'lumen-chat-1', stream: true, includeUsage: true });
    expect(r.body).toEqual({
      model: 'lumen-chat-1',
      max_tokens: 20,
      temperature: 0.3,
      top_p: 0.9,
      stop_sequences: ['END'],
      metadata: { user_id: 'u-7' },
      stream: true,
      system: [
        { type: 'text', text: 'be brief' },
        { type: 'text', text: 'and kind' },
      ],
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ name: 'f', description: 'd', input_schema: { type: 'object', properties: { a: { type: 'string' } } } }],
      tool_choice: { type: 'tool', name: 'f', disable_parallel_tool_use: true },
    });
    expect(parseChatRequest(base).body).toEqual({ model: 'lumen-chat-1', max_tokens: DEFAULT_MAX_TOKENS, messages: base.messages });
    expect(parseChatRequest({ ...base, tools: [{ type: 'function', function: { name: 'g' } }], tool_choice: 'required' }).body.tool_choice).toEqual({
      type: 'any',
    });
  });

  it('names each parameter it cannot honour or read in a 400 (field and rule)', () => {
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ n: 2 }, 'n', 'unsupported_parameter'],
      [{ logprobs: true }, 'logprobs', 'unsupported_parameter'],
      [{ top_logprobs: 3 }, 'top_logprobs', 'unsupported_parameter'],
      [{ audio: { voice: 'alloy', format: 'mp3' } }, 'audio', 'unsupported_parameter'],
      [{ modalities: ['text', 'audio'] }, 'modalities', 'unsupported_parameter'],
      [{ functions: [] }, 'functions', 'unsupported_parameter'],
      [{ response_format: { type: 'json_object' } }, 'response_format', 'unsupported_parameter'],
      [{ temperature: 1.5 }, 'temperature', 'range'],
      [{ max_completion_tokens: 0 }, 'max_completion_tokens', 'integer'],
      [{ stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', 'type'],
      [{ model: '' }, 'model', 'required'],
      [{ messages: [] }, 'messages', 'required'],
      [{ messages: [{ role: 'system', content: 'only a system message' }] }, 'messages', 'required'],
      [{ messages: [{ role: 'function', content: 'x' }] }, 'messages[0].role', 'enum'],
      [
        { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AA==', format: 'wav' } }] }] },
        'messages[0].content[0]',
        'unsupported_parameter',
      ],
      [
        { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/bmp;base64,AA==' } }] }] },
        'messages[0].content[0].image_url.url',
        'data_url',
      ],
      [{ messages: [{ role: 'assistant', content: null }] }, 'messages', 'required'],
      [
        { messages: [{ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{oops' } }] }] },
        'messages[0].tool_calls[0].function.arguments',
        'json',
      ],
      [{ messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id', 'required'],
      [{ tools: [{ type: 'custom', custom: { name: 'x' } }] }, 'tools[0]', 'type'],
    ];
    for (const [patch, field, rule] of cases) {
      const e = rejection({ ...base, ...patch });
      expect([e.code, e.details.field, e.details.rule, e.message.includes(`\`${field}`)]).toEqual(['invalid_request', field, rule, true]);
    }
  });
});

describe('the answer half', () => {
  it('maps stop reasons, usage and vendor errors', () => {
    const reasons = ['end_turn', 'stop_sequence', 'max_tokens', 'model_context_window_exceeded', 'pause_turn', 'tool_use', 'refusal', 'something_new', null];
    expect(reasons.map(finishReasonOf)).toEqual(['stop', 'stop', 'length', 'length', 'length', 'tool_calls', 'content_filter', 'stop', null]);
    expect(usageOf({ input_tokens: 10, cache_creation_input_tokens: 5, cache_read_input_tokens: 100, output_tokens: 7 })).toEqual({
      prompt_tokens: 115,
      completion_tokens: 7,
      total_tokens: 122,
      prompt_tokens_details: { cached_tokens: 100 },
    });
    const vendor = Buffer.from(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }));
    expect(chatErrorOfUpstream(529, vendor)).toEqual({ error: { type: 'overloaded_error', message: 'Overloaded', param: null, code: null } });
    expect(chatErrorOfUpstream(502, Buffer.from('<html>'))).toEqual({
      error: { type: 'upstream_error', message: 'The upstream answered 502', param: null, code: null },
    });
  });
});
