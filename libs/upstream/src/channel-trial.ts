import { randomUUID } from 'node:crypto';
import { resolveModel } from '@gmg/contracts';
import { UpstreamError } from '@gmg/errors';
import type { AdapterRegistry, ChannelTarget } from './adapter';
import { healthEffect, statusEffect } from './channel-health';
import { keyedTarget, type KeyedChannel } from './channel-keys';
import type { MessagesUpstreamClient } from './messages/messages-upstream.client';
import { scrubSecret, truncate } from './upstream-failure';
import { readCommonError } from './vendor-call';

/**
 * A trial call's verdict: `ok` (the vendor accepted the key and answered), `refused` (it refused the key: credentials
 * or balance), `unreachable` (no answer: connection refused, DNS, timeout), `error` (it answered with another
 * failure: overload, a rate limit, a server error).
 */
export type TrialStatus = 'ok' | 'refused' | 'unreachable' | 'error';

export interface TrialResult {
  status: TrialStatus;
  latencyMs: number;
  /** The vendor's own message (or the network error), never a secret. */
  message?: string;
}

export interface TrialDeps {
  adapters: AdapterRegistry;
  /** For `messages` channels. */
  messages: Pick<MessagesUpstreamClient, 'send'>;
  /** A trial call gives up after this. Default 15 s. */
  timeoutMs?: number;
  now?: () => number;
}

/** The `anthropic-version` (or the channel's header) a trial call sends. */
const TRIAL_VERSION = '2023-06-01';

/**
 * One real, minimal call through the channel's protocol with one key (issue 37: the channel test and the health
 * probe's trial):
 * - `messages` channels: a one-token message (`max_tokens: 1`, "ping") to `model` — a real completion, billed by the
 *   vendor at a few tokens;
 * - task protocols: the adapter's poll of a task id that does not exist. A 404 (or any answer that is not a refusal
 *   of the key, e.g. a 400/422 for the unknown id) proves the vendor is reachable and took the key; 401/402/403 (or a
 *   documented balance refusal) say it refused the key. It costs nothing and creates nothing — and so it does NOT prove
 *   the key may submit this model (model access, per-model quota, a balance that only runs out on submit).
 */
export async function trialCall(d: TrialDeps, ch: ChannelTarget, opts: { model?: string; versionHeader?: string } = {}): Promise<TrialResult> {
  const now = d.now ?? Date.now;
  const started = now();
  const done = (status: TrialStatus, message?: string): TrialResult => ({
    status,
    latencyMs: Math.max(0, Math.round(now() - started)),
    ...(message ? { message: truncate(scrubSecret(message, ch.apiKey), 500) } : {}),
  });
  const signal = AbortSignal.timeout(d.timeoutMs ?? 15_000);
  if (ch.protocol === 'messages') {
    try {
      const body = Buffer.from(
        JSON.stringify({ model: ch.modelMap[opts.model ?? ''] ?? opts.model ?? 'default', max_tokens: 1, messages: [{ role: 'user', content: 'ping' }] }),
      );
      const answer = await d.messages.send({
        // the channel's headers, proxy and timeouts, as its real calls have them
        target: { ...ch, versionHeader: opts.versionHeader ?? 'anthropic-version', overrides: ch.settings },
        version: TRIAL_VERSION,
        body,
        signal,
      });
      const chunks: Buffer[] = [];
      for await (const c of answer.body as AsyncIterable<Buffer>) chunks.push(c);
      if (answer.status >= 200 && answer.status < 300) return done('ok');
      const text = Buffer.concat(chunks).toString('utf8');
      let message: string;
      try {
        message = readCommonError(JSON.parse(text)).message ?? `HTTP ${answer.status}`;
      } catch {
        message = text.slice(0, 300) || `HTTP ${answer.status}`;
      }
      return done(statusEffect(answer.status, message) === 'refused' ? 'refused' : 'error', `HTTP ${answer.status}: ${message}`);
    } catch (e) {
      return done(
        'unreachable',
        (e as Error).name === 'TimeoutError' || signal.aborted ? 'timed out' : `network error ${(e as { code?: string }).code ?? 'unknown'}`,
      );
    }
  }
  const adapter = d.adapters.getAdapter(ch.protocol);
  if (!adapter) return done('error', `no adapter for protocol ${ch.protocol}`);
  try {
    // the model's pool: protocols that poll different paths per kind of task take it
    const pool = opts.model ? resolveModel(opts.model)?.pool : undefined;
    const req = opts.model && pool ? { pool, model: opts.model } : undefined;
    await adapter.poll(ch, `gmg-probe-${randomUUID()}`, req);
    return done('ok');
  } catch (e) {
    if (!(e instanceof UpstreamError)) return done('error', (e as Error).message);
    if (e.kind === 'network' || e.kind === 'timeout') return done('unreachable', e.message);
    const effect = healthEffect(e);
    if (effect === 'refused') return done('refused', e.message);
    if (effect === 'none') return done('ok', e.message);
    return done('error', e.message);
  }
}

/** One key's trial in a channel test: which key (never its secret) and what the vendor said. */
export interface KeyTrial extends TrialResult {
  /** Null: the channel's own one key (`api_key`). */
  keyId: string | null;
  hint: string | null;
}

/**
 * `POST /api/channels/{id}/test`: one trial call per key of the channel (every key, whatever its health), one after
 * the other, with the channel's first listed model (`model`: another one).
 */
export async function trialEachKey(
  d: TrialDeps,
  ch: KeyedChannel & { models?: string[] | null; versionHeader?: string },
  model = ch.models?.[0],
): Promise<KeyTrial[]> {
  const keys = ch.keys.length ? ch.keys : [null];
  const out: KeyTrial[] = [];
  for (const k of keys) {
    const r = await trialCall(d, keyedTarget(ch, k), { model, versionHeader: ch.versionHeader });
    out.push({ keyId: k?.id ?? null, hint: k?.hint ?? null, ...r });
  }
  return out;
}
