import { UpstreamError } from '@gmg/errors';
import { isObj, parseJsonObject } from '../../json-value';

/**
 * What the gateway keeps as a BFL task's upstream id: BFL's `id`, the `polling_url` BFL returned (BFL: poll the
 * returned URL, never a constructed one — its global endpoint routes a task to a regional cluster whose host only
 * that URL names) and when it was submitted (a `Task not found` just after the submit is not final yet).
 */
export interface BflTaskRef {
  id: string;
  pollingUrl: string;
  submittedAt: number;
}

const MAX_ID = 200;
const MAX_URL = 2048;

export const encodeBflRef = (r: BflTaskRef): string => JSON.stringify({ id: r.id, url: r.pollingUrl, at: r.submittedAt });

/** The stored id back; a malformed one (not ours) is a final failure: no poll can find that task. */
export function decodeBflRef(upstreamTaskId: string): BflTaskRef {
  const o = parseJsonObject(upstreamTaskId);
  if (typeof o.id !== 'string' || typeof o.url !== 'string' || typeof o.at !== 'number') {
    throw new UpstreamError('bfl: the upstream task id is not a BFL task reference', false, undefined, 'not_found');
  }
  return { id: o.id, pollingUrl: o.url, submittedAt: o.at };
}

/**
 * The `{id, polling_url}` of a submit answer, bounded. None (or an unusable one): a retryable failure — the task may
 * exist at BFL but cannot be followed, and BFL documents no idempotency key, so a retry submits a second one.
 */
export function refOfSubmitAnswer(body: unknown, at: number, describe: string): BflTaskRef {
  const o = isObj(body) ? body : {};
  const id = typeof o.id === 'string' && o.id.length > 0 && o.id.length <= MAX_ID ? o.id : undefined;
  const url = typeof o.polling_url === 'string' && o.polling_url.length <= MAX_URL && /^https?:\/\//i.test(o.polling_url) ? o.polling_url : undefined;
  if (!id || !url) throw new UpstreamError(`${describe}: answer without a usable id and polling_url`, true, undefined, 'server');
  return { id, pollingUrl: url, submittedAt: at };
}

/** BFL's own domains (api.bfl.ai, api.eu.bfl.ai, api.us.bfl.ai, regional clusters such as api.eu2.bfl.ai; bfl.ml the older name). */
const BFL_DOMAIN = /(^|\.)bfl\.(ai|ml)$/i;

/**
 * The polling URL the channel's key may go to: the channel's own origin (operator-configured, e.g. a proxy or the
 * simulator), or https on a BFL domain. Anything else is a final failure and the key is never sent there: a
 * `polling_url` is the vendor's answer, but an answer is not a reason to hand our key to a third host.
 */
export function trustedPollUrl(baseUrl: string, pollingUrl: string, describe: string): URL {
  let url: URL;
  let base: URL;
  try {
    url = new URL(pollingUrl);
    base = new URL(baseUrl);
  } catch {
    throw new UpstreamError(`${describe}: polling_url is not a URL`, false, undefined, 'bad_request');
  }
  const sameOrigin = url.origin === base.origin;
  const bflHost = url.protocol === 'https:' && BFL_DOMAIN.test(url.hostname);
  if (!sameOrigin && !bflHost) {
    throw new UpstreamError(`${describe}: polling_url host ${url.host.slice(0, 100)} is neither the channel's nor BFL's`, false, undefined, 'bad_request');
  }
  return url;
}
