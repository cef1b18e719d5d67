import { UpstreamError } from '@gmg/errors';
import type { ChannelTarget } from '../../adapter';
import { isObj, str, type Json } from '../../json-value';
import type { UpstreamAnswer } from '../../upstream-http';
import { callVendor, type VendorErrorReader, type VendorOperation } from '../../vendor-call';

/**
 * A proxy answers every submit `{code, description, result, properties}` (SubmitResultVO), mostly under HTTP 200;
 * `code` says what happened (ReturnCode): 1 submitted, 21 exists (the task waits in MODAL: "Waiting for window
 * confirm"), 22 queued, 23 queue full, 24 banned prompt, 3 not found (under HTTP 404), 4 validation, 9 failure.
 */
export const MJ_CODES = { ok: 1, notFound: 3, validation: 4, failure: 9, existed: 21, inQueue: 22, queueFull: 23, banned: 24 } as const;

/** How long a channel whose queue is full is left for another one (the proxy says no time: a guess of ours). */
const QUEUE_FULL_RETRY_MS = 2000;

const codeOf = (body: unknown): number | undefined => (isObj(body) && typeof body.code === 'number' ? body.code : undefined);

const readMjError: VendorErrorReader = (body) => {
  const code = codeOf(body);
  return { type: code === undefined ? undefined : `mj_${code}`, message: isObj(body) ? str(body.description) : undefined };
};

/** A submit that was accepted: the proxy's task id, and whether it waits in MODAL (code 21). */
export interface MjAccepted {
  id: string;
  modal: boolean;
}

const PROXY_ID = /^[A-Za-z0-9._-]{1,128}$/;
export const isProxyTaskId = (id: unknown): id is string => typeof id === 'string' && PROXY_ID.test(id);

/** The UpstreamError of a refused submit (any code but 1, 21 and 22). The client sees a neutral message only. */
function refusal(res: UpstreamAnswer, describe: string): UpstreamError {
  const code = codeOf(res.data) ?? -1;
  const msg = `${describe} answered HTTP ${res.status} code ${code}`;
  switch (code) {
    case MJ_CODES.queueFull:
      return new UpstreamError(`${msg} (queue full)`, true, res.status, 'quota', QUEUE_FULL_RETRY_MS);
    case MJ_CODES.banned:
      return new UpstreamError(`${msg} (banned prompt)`, false, res.status, 'moderation');
    case MJ_CODES.notFound:
      return new UpstreamError(`${msg} (task not found)`, false, res.status, 'not_found');
    default:
      return new UpstreamError(`${msg}`, false, res.status, 'bad_request');
  }
}

/**
 * One proxy submit: counted and timed by callVendor, then read by its code. Codes 1 and 22 give a task; 21 gives
 * one waiting in MODAL (the caller decides whether it expected that); 23 is retryable (another channel's queue may
 * have room); 24 is a moderation refusal; anything else is final. Answers without a code keep callVendor's
 * classification (an auth failure of the channel's key, a 5xx of the proxy).
 */
export async function submitMj(ch: ChannelTarget, describe: string, send: () => Promise<UpstreamAnswer>): Promise<MjAccepted> {
  let raw: UpstreamAnswer | undefined;
  let res: UpstreamAnswer;
  try {
    res = await callVendor(ch, 'submit', describe, async () => (raw = await send()), readMjError);
  } catch (e) {
    // a code under 4xx (404: code 3) is the proxy's answer; auth, rate and server failures keep callVendor's reading
    if (raw && codeOf(raw.data) !== undefined && raw.status < 500 && ![401, 403, 429].includes(raw.status)) throw refusal(raw, describe);
    throw e;
  }
  const code = codeOf(res.data);
  if (code === undefined) throw new UpstreamError(`${describe}: answer without a code`, true, res.status, 'server');
  if (code !== MJ_CODES.ok && code !== MJ_CODES.existed && code !== MJ_CODES.inQueue) throw refusal(res, describe);
  const id = (res.data as Json).result;
  // No usable id: the task may exist at the proxy but cannot be followed; retryable (the proxy has no idempotency key).
  if (!isProxyTaskId(id)) throw new UpstreamError(`${describe}: code ${code} without a usable result (task id)`, true, res.status, 'server');
  return { id, modal: code === MJ_CODES.existed };
}

/** One proxy read (`GET /mj/task/{id}/fetch`): the task object, or a classified failure. */
export async function fetchMj(ch: ChannelTarget, op: VendorOperation, describe: string, send: () => Promise<UpstreamAnswer>): Promise<Json> {
  const res = await callVendor(ch, op, describe, send, readMjError);
  if (!isObj(res.data)) throw new UpstreamError(`${describe}: answer without a task object`, true, res.status, 'server');
  // Some proxies answer an unknown id with HTTP 200 and an empty body or a code-3 result.
  if (codeOf(res.data) === MJ_CODES.notFound || res.data.id === undefined) {
    throw new UpstreamError(`${describe}: task not found`, false, res.status, 'not_found');
  }
  return res.data;
}
