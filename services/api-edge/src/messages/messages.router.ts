import express, { Router, type RequestHandler } from 'express';
import { isModelAllowed, resolveModel, tokenHold, tokenPricesOf, type TokenPrices } from '@gmg/contracts';
import type { AuthPrincipal } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import type { MessagesUpstreamClient } from '@gmg/upstream';
import { bodyBudgetGate, type BodyBudget } from '../http/body-budget';
import { assertJsonDepth } from '../http/json-depth';
import { methodNotAllowed } from '../http/error-handler';
import { principalOf } from '../http/principal';
import type { PriceTableCache } from '../pricing/price-table.cache';
import type { ChatCallSweeper } from './chat-call.sweeper';
import type { CreditLeaseBook } from './credit-lease.book';
import { settlementOf } from './messages-charge';
import type { MessagesChannelCache } from './messages-channel.cache';
import { relayMessages } from './messages-relay';
import { parseMessagesRequest } from './messages-request';
import { parseMessagesVersion } from './messages-version';

export interface MessagesRouterDeps {
  /** Where calls reserve their money and record their cost (no Postgres round trip before the first byte). */
  book: Pick<CreditLeaseBook, 'reserve' | 'finish'>;
  channels: Pick<MessagesChannelCache, 'get'>;
  prices: Pick<PriceTableCache, 'get'>;
  client: MessagesUpstreamClient;
  sweeper: Pick<ChatCallSweeper, 'poke'>;
  logger: Logger;
  maxBodyBytes: number;
  /** The large bodies' budget (http/body-budget.ts): a large body waits for its share before it is read. */
  budget?: BodyBudget;
  newTaskId: () => string;
  /** Mounted after auth: requests per second per key. */
  guards: RequestHandler[];
}

/** Client request headers passed upstream unchanged. */
const PASSED_HEADERS = ['anthropic-beta'];

const JSON_TYPES = ['application/json', '+json'];

/** The body as bytes (it goes upstream untouched); 415 for another media type, 413 over the limit. */
function rawJsonBody(limit: number, budget: BodyBudget | undefined): RequestHandler[] {
  const requireJson: RequestHandler = (req, _res, next) => {
    if (req.is(JSON_TYPES) === false) {
      throw new DomainError('unsupported_media_type', `Content-Type must be application/json (got '${req.headers['content-type'] ?? ''}')`);
    }
    next();
  };
  // nesting is checked on the bytes: the body is parsed (and measured with JSON.stringify) before it goes upstream
  const raw = express.raw({ type: JSON_TYPES, limit, verify: (_req, _res, buf) => assertJsonDepth(buf) });
  return budget ? [requireJson, bodyBudgetGate(budget, () => limit), raw] : [requireJson, raw];
}

function chatModel(name: string, principal: AuthPrincipal): string {
  const model = resolveModel(name);
  if (!model || !model.supportedEndpointTypes.includes('messages')) {
    throw new DomainError('invalid_request', `\`model\`: '${name}' is not a chat model; GET /v1/models?expand=category&category=chat lists them`, {
      field: 'model',
      rule: 'chat_model',
    });
  }
  if (!isModelAllowed(model.id, principal.keyModels, principal.groupModels)) {
    throw new DomainError('permission', `This API key is not allowed to use model '${name}'`, { field: 'model' });
  }
  return model.id;
}

/**
 * POST /v1/messages (spec 4.5): checks (version, body, model, permission, price, channel) → reserve the most the
 * call can cost from the account's credit lease (in memory) → relay → record the actual cost (batched, after the
 * answer). Everything that can reject the request happens before the reservation.
 */
export function messagesRouter(d: MessagesRouterDeps): Router {
  const router = Router();
  const handler: RequestHandler = async (req, res) => {
    d.sweeper.poke();
    const version = parseMessagesVersion(req.headers);
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const request = parseMessagesRequest(raw);
    const principal = principalOf(res);
    const model = chatModel(request.model, principal);
    const prices = await pricesOf(d, model);
    const channels = await d.channels.get(model, principal.groupName);
    if (channels.length === 0) throw new DomainError('service_unavailable', `No upstream channel serves model '${request.model}' at the moment`);

    const hold = tokenHold(request.inputBound, request.maxTokens, prices, principal.priceRatio);
    const reservation = await d.book.reserve(principal.accountId, hold);
    const startedAt = new Date();
    const call = {
      id: d.newTaskId(),
      accountId: principal.accountId,
      apiKeyId: principal.keyId,
      model,
      requestedModel: request.model,
      request: { endpoint: 'POST /v1/messages', max_tokens: request.maxTokens, stream: request.stream, input_bound: request.inputBound, images: request.images },
      priceSnapshot: { total: hold.toString(), ratio: principal.priceRatio, per_million: Object.fromEntries(Object.entries(prices).map(([k, v]) => [k, v.toString()])) },
      startedAt,
    };

    const headers: Record<string, string> = {};
    for (const h of PASSED_HEADERS) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h];
    let outcome;
    try {
      outcome = await relayMessages(d.client, d.logger, { res, channels, version, body: raw, stream: request.stream, headers });
    } catch (err) {
      // a bug, not an upstream failure: nothing charged, then the error handler answers (or ends the stream)
      d.book.finish(reservation, { ...call, status: 'failed', cost: 0n, result: { charge_rule: 'nothing_produced', reason: 'gateway_error' }, error: { code: 'server_error', message: 'gateway error' }, channelId: null });
      throw err;
    }
    d.book.finish(reservation, { ...call, ...settlementOf(outcome, request, prices, principal.priceRatio) });
    if (outcome.error) throw outcome.error;
  };
  router.post('/v1/messages', ...d.guards, ...rawJsonBody(d.maxBodyBytes, d.budget), handler);
  router.all('/v1/messages', methodNotAllowed(['POST']));
  return router;
}

async function pricesOf(d: MessagesRouterDeps, model: string): Promise<TokenPrices> {
  const found = tokenPricesOf(model, await d.prices.get());
  if ('prices' in found) return found.prices;
  d.logger.error({ model, missing: found.missing }, 'chat model not priced');
  throw new DomainError('service_unavailable', `Model '${model}' is temporarily unavailable (model not priced)`);
}
