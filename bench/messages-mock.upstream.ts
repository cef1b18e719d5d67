/**
 * The minimal messages upstream of `npm run bench -- messages`: as little work per call as a server can do, so
 * the benchmark measures the gateway, not the upstream. POST /v1/messages answers a fixed message, or with
 * `stream: true` a fixed event stream; with the `x-mock-hold-ms` header the stream sends message_start, then a
 * ping every second until that time has passed (the open streams of the memory test). Port from MOCK_PORT.
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

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') return void res.end('ok');
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const stream = Buffer.concat(chunks).includes('"stream":true');
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
