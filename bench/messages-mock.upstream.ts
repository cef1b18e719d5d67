/**
 * The minimal messages upstream of `npm run bench -- messages`: as little work per call as a server can do, so
 * the benchmark measures the gateway, not the upstream. POST /v1/messages answers a fixed message, or with
 * `stream: true` a fixed event stream; with the `x-mock-hold-ms` header the stream sends message_start, then a
 * ping every second until that time has passed (the open streams of the memory test). POST /v1/chat/completions
 * (an `openai` channel) answers a fixed chat completion, or its chunks with the usage chunk and `[DONE]`. Port
 * from MOCK_PORT.
 */
import http from 'node:http';

const MESSAGE = JSON.stringify({
  id: 'msg_bench',
  type: 'message',
  role: 'assistant',
  model: 'lumen-chat-1-mini',
  content: [{ type: 'text', text: 'Hello from the bench upstream.' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 12, output_tokens: 8, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
});
const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const START = ev('message_start', {
  message: { ...(JSON.parse(MESSAGE) as object), content: [], stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } },
});
const REST =
  ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
  ['Hello ', 'from ', 'the ', 'bench ', 'upstream.'].map((text) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })).join('') +
  ev('content_block_stop', { index: 0 }) +
  ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 8 } }) +
  ev('message_stop', {});
const PING = ev('ping', {});

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'lumen-chat-1',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the bench upstream.', refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20, prompt_tokens_details: { cached_tokens: 0 } },
});
const chunk = (choices: object[], usage: object | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'lumen-chat-1', choices, usage })}\n\n`;
const CHUNKS =
  chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]) +
  ['Hello ', 'from ', 'the ', 'bench ', 'upstream.'].map((content) => chunk([{ index: 0, delta: { content }, finish_reason: null }])).join('') +
  chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]) +
  chunk([], { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 }) +
  'data: [DONE]\n\n';

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') return void res.end('ok');
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const stream = Buffer.concat(chunks).includes('"stream":true');
    if (req.url === '/v1/chat/completions') {
      res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
      return void res.end(stream ? CHUNKS : COMPLETION);
    }
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(MESSAGE) });
      return void res.end(MESSAGE);
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const holdMs = Number(req.headers['x-mock-hold-ms'] ?? 0);
    if (!holdMs) return void res.end(START + REST);
    res.write(START);
    const until = Date.now() + holdMs;
    const timer = setInterval(() => {
      if (Date.now() < until) return void res.write(PING);
      clearInterval(timer);
      res.end(REST);
    }, 1000);
    res.on('close', () => clearInterval(timer));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.MOCK_PORT ?? 0), '127.0.0.1', () => console.log('mock upstream listening'));
process.on('SIGTERM', () => process.exit(0));
