import { connect } from 'node:net';

/** True when something accepts TCP connections on 127.0.0.1:port. */
export function portInUse(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ port, host });
    const done = (v: boolean): void => {
      s.destroy();
      resolve(v);
    };
    s.setTimeout(500, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

export async function httpOk(url: string, timeoutMs = 1000): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

/** Polls `url` until it answers 2xx, `giveUp()` says stop, or the deadline passes. */
export async function waitHealthy(url: string, deadline: number, giveUp: () => boolean): Promise<boolean> {
  while (Date.now() < deadline && !giveUp()) {
    if (await httpOk(url)) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

export interface SmokeResult {
  ok: boolean;
  taskId?: string;
  status?: string;
  detail: string;
}

/** Submits one lumen-2-pro image through the public API and polls it to a terminal state. */
export async function smokeImageTask(baseUrl: string, apiKey: string, timeoutMs: number): Promise<SmokeResult> {
  const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  const submit = await fetch(`${baseUrl}/v1/images/generations`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ model: 'lumen-2-pro', prompt: 'a lighthouse at dawn (npm start smoke test)', resolution: '1MP', size: '1:1' }),
  });
  const ack = (await submit.json().catch(() => ({}))) as { data?: Array<{ task_id?: string }> };
  const taskId = ack.data?.[0]?.task_id;
  if (!submit.ok || !taskId) return { ok: false, detail: `submit answered ${submit.status}: ${JSON.stringify(ack)}` };
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    const res = await fetch(`${baseUrl}/v1/tasks/${taskId}`, { headers });
    last = await res.json().catch(() => undefined);
    const status = (last as { data?: { status?: string } } | undefined)?.data?.status;
    if (status === 'completed' || status === 'failed') {
      return { ok: status === 'completed', taskId, status, detail: JSON.stringify(last) };
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return { ok: false, taskId, detail: `not terminal after ${timeoutMs} ms; last answer ${JSON.stringify(last)}` };
}

/** One chat call over the messages protocol (the demo's `messages` channel to the simulator), as a vendor client makes it. */
export async function smokeChat(baseUrl: string, apiKey: string): Promise<{ ok: boolean; detail: string }> {
  const res = await fetch(`${baseUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'lumen-chat-1', max_tokens: 64, messages: [{ role: 'user', content: 'npm start smoke test' }] }),
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await res.json().catch(() => ({}))) as { type?: string; content?: Array<{ text?: string }> };
  return { ok: res.status === 200 && body.type === 'message', detail: `${res.status} ${JSON.stringify(body).slice(0, 300)}` };
}
