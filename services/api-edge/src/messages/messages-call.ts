import { tokenHold, type TokenPrices } from '@gmg/contracts';
import { spendCapError, type ApiKeyRepository, type AuthPrincipal, type MessagesChannel } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import type { MessagesUpstreamClient } from '@gmg/upstream';
import type { CreditLeaseBook } from './credit-lease.book';
import { liveCostOf, settlementOf } from './messages-charge';
import { relayMessages, type RelayInput, type RelayOutcome } from './messages-relay';
import type { MessagesRequest } from '../chat/messages-request';
import type { MessagesSink } from '../chat/messages-sink';
import { SseUsageTracker } from './sse-usage.tracker';

/** What serving one messages call needs (built once per app). */
export interface MessagesCallDeps {
  book: Pick<CreditLeaseBook, 'reserve' | 'open' | 'finish'>;
  client: MessagesUpstreamClient;
  gate: RelayInput['gate'];
  health?: RelayInput['health'];
  limits: RelayInput['limits'];
  logger: Logger;
  newTaskId: () => string;
  /** A capped key's spend: a call's most is counted in before it starts, what it did not use given back after. */
  keySpend: Pick<ApiKeyRepository, 'reserveSpend' | 'giveBackSpend'>;
}

/** One call, checked already (model allowed, priced, channels found): what it sends and where the answer goes. */
export interface MessagesCall {
  principal: AuthPrincipal;
  request: MessagesRequest;
  /** The catalog id of the model (`request.model` is the name the client used). */
  model: string;
  prices: TokenPrices;
  channels: readonly MessagesChannel[];
  version: string;
  /** The messages body sent upstream. */
  body: Buffer;
  headers: Record<string, string>;
  sink: MessagesSink;
  /** Shown on the call's record (`request.endpoint`), e.g. `POST /v1/messages`. */
  endpoint: string;
  /** The call's times, sent back as `Server-Timing`. */
  timing?: RelayInput['timing'];
  /** The call for an `openai` channel (openai-chat/openai-legs.ts). */
  openai?: RelayInput['openai'];
}

/**
 * Reserve the most the call can cost (in memory, from the account's credit lease) → relay → charge what it used,
 * exactly once. The call's row is issued before the upstream request (batched with other calls) and the first byte
 * does not wait for it; a stream's later writes do, so a kill -9 of the edge charges what the call journalled
 * (docs/messages.md, "What a crash costs").
 * Resolves with the outcome; an error the gateway answers itself is in `outcome.error` (nothing was sent).
 * Throws 402 when the balance cannot cover the reservation.
 */
export async function serveMessagesCall(d: MessagesCallDeps, c: MessagesCall): Promise<RelayOutcome> {
  const { principal, request, prices } = c;
  const hold = tokenHold(request.inputBound, request.maxTokens, prices, principal.priceRatio);
  // A capped key: the call's most counted into the key's spend first (refused with 402 when it would pass the cap,
  // before any money moves); whatever it did not use is given back when it ends. A kill -9 in between leaves the
  // key counted high (its cap reached early), never passed.
  const { cap } = principal;
  const period = cap ? await d.keySpend.reserveSpend(principal.keyId, cap, hold) : null;
  if (cap && period === null) throw spendCapError(cap);
  const giveBack = (cost: bigint): void => {
    if (period === null || cost >= hold) return;
    d.keySpend.giveBackSpend(principal.keyId, period, hold - cost).catch((err: unknown) => {
      d.logger.warn({ err, keyId: principal.keyId }, "a capped key's unused reservation was not given back: the key counts it as spent");
    });
  };
  let reservation: Awaited<ReturnType<MessagesCallDeps['book']['reserve']>>;
  try {
    reservation = await d.book.reserve(principal.accountId, hold);
  } catch (err) {
    giveBack(0n);
    throw err;
  }
  const call = {
    id: d.newTaskId(),
    accountId: principal.accountId,
    apiKeyId: principal.keyId,
    model: c.model,
    requestedModel: request.model,
    request: { endpoint: c.endpoint, max_tokens: request.maxTokens, stream: request.stream, input_bound: request.inputBound, images: request.images },
    priceSnapshot: {
      total: hold.toString(),
      ratio: principal.priceRatio,
      per_million: Object.fromEntries(Object.entries(prices).map(([k, v]) => [k, v.toString()])),
    },
    startedAt: new Date(),
  };
  const tracker = new SseUsageTracker();
  // journalled while the call runs: what a crash of this process charges it
  const row = d.book.open(reservation, call, () => liveCostOf(tracker, request, prices, principal.priceRatio));
  let outcome: RelayOutcome;
  try {
    outcome = await relayMessages(d.client, d.logger, {
      sink: c.sink,
      channels: c.channels,
      gate: d.gate,
      health: d.health,
      version: c.version,
      body: c.body,
      stream: request.stream,
      headers: c.headers,
      limits: d.limits,
      tracker,
      row,
      timing: c.timing,
      openai: c.openai,
    });
  } catch (err) {
    // a bug, not an upstream failure: nothing charged, then the error handler answers (or ends the stream)
    d.book.finish(reservation, {
      ...call,
      status: 'failed',
      cost: 0n,
      result: { charge_rule: 'nothing_produced', reason: 'gateway_error' },
      error: { code: 'server_error', message: 'gateway error' },
      channelId: null,
    });
    giveBack(0n);
    throw err;
  }
  const settlement = settlementOf(outcome, request, prices, principal.priceRatio);
  d.book.finish(reservation, { ...call, ...settlement });
  giveBack(settlement.cost);
  return outcome;
}
