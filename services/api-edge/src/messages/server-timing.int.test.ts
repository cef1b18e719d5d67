import { startChatWorld, type EdgeHarness } from '../chat/chat.test-kit';

/**
 * `Server-Timing` on every chat answer (docs/messages.md, "Server-Timing"), through real HTTP against a real
 * upstream-sim process: `gw` (the gateway's time before the upstream call) always; `upstream` and `total` on a
 * whole answer only (a stream's headers leave before its body). No wall-clock bounds: only that the values parse
 * and are ordered.
 */
let h: EdgeHarness;
let key: string;
let close: (() => Promise<void>) | undefined;
const MODEL = 'lumen-chat-1';

beforeAll(async () => {
  ({ h, key, close } = await startChatWorld([MODEL]));
}, 60_000);
afterAll(async () => {
  await close?.();
});

/** `name;dur=1.23, …` → { name: 1.23, … }; fails on any entry that is not a name with a finite, non-negative duration. */
function parseServerTiming(header: string | null): Record<string, number> {
  expect(header).toEqual(expect.any(String));
  const out: Record<string, number> = {};
  for (const entry of header!.split(',')) {
    const m = /^\s*([a-z]+);dur=(\d+(?:\.\d+)?)\s*$/.exec(entry);
    expect(m).not.toBeNull();
    out[m![1]] = Number(m![2]);
  }
  return out;
}

const post = (path: string, body: object) =>
  fetch(`${h.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });

const messagesBody = (stream: boolean) => ({ model: MODEL, max_tokens: 64, stream, messages: [{ role: 'user', content: 'Hello there' }] });
const chatBody = (stream: boolean) => ({ model: MODEL, stream, messages: [{ role: 'user', content: 'Hello there' }] });

describe.each([
  ['/v1/messages', messagesBody],
  ['/v1/chat/completions', chatBody],
])('Server-Timing on POST %s', (path, body) => {
  it('a whole answer: gw, upstream and total, gw and upstream each within total', async () => {
    const res = await post(path, body(false));
    expect(res.status).toBe(200);
    await res.json();
    const t = parseServerTiming(res.headers.get('server-timing'));
    expect(Object.keys(t).sort()).toEqual(['gw', 'total', 'upstream']);
    expect(t.gw).toBeLessThanOrEqual(t.total);
    expect(t.upstream).toBeLessThanOrEqual(t.total);
  });

  it('a stream: only gw, in the headers before the first byte', async () => {
    const res = await post(path, body(true));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const t = parseServerTiming(res.headers.get('server-timing'));
    expect(Object.keys(t)).toEqual(['gw']);
    const text = await res.text();
    expect(text.length).toBeGreaterThan(0);
  });
});
