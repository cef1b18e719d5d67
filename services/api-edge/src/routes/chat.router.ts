import type { IncomingHttpHeaders } from 'node:http';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { isModelAllowed, resolveModel, tokenPricesOf, type TokenPrices } from '@gmg/contracts';
import type { AuthPrincipal, MessagesChannel } from '@gmg/db';
import { DomainError } from '@gmg/errors';
import { CHAT_UPSTREAM_VERSION, chatCallOf } from '../chat-completions/chat-front';
import { chatSink } from '../chat-completions/chat-sink';
import type { BodyBudget } from '../http/body-budget';
import { jsonBody } from '../http/json-body';
import { methodNotAllowed } from '../http/error-handler';
import { principalOf } from '../http/principal';
import type { PriceTableCache } from '../pricing/price-table.cache';
import type { ChatCallSweeper } from '../messages/chat-call.sweeper';
import { countTokens } from '../messages/messages-count-tokens';
import { serveMessagesCall, type MessagesCallDeps } from '../messages/messages-call';
import type { ChannelListCache } from '../channels/channel-list.cache';
import { parseMessagesRequest, type MessagesRequest } from '../chat/messages-request';
import { httpSink, type MessagesSink } from '../chat/messages-sink';
import { CallTiming } from '../messages/server-timing';
import type { UpstreamLeg } from '../messages/messages-relay';
import { chatPassLeg, messagesToChatLeg } from '../openai-chat/openai-legs';
import { chatBodyOfMessages } from '../openai-chat/messages-to-chat';
import { parseMessagesVersion } from '../messages/messages-version';

export interface MessagesRouterDeps {
  /** Reservation, relay and charge of one call (messages-call.ts); reusable by other fronts. */
  call: MessagesCallDeps;
  channels: Pick<ChannelListCache<MessagesChannel>, 'get'>;
  prices: Pick<PriceTableCache, 'get'>;
  sweeper: Pick<ChatCallSweeper, 'poke'>;
  maxBodyBytes: number;
  /** The large bodies' budget (http/body-budget.ts): a large body waits for its share before it is read. */
  budget?: BodyBudget;
  /** Mounted after auth: requests per second per key. */
  guards: RequestHandler[];
}

/** Client request headers passed upstream unchanged. */
const PASSED_HEADERS = ['anthropic-beta'];

const passedHeaders = (h: IncomingHttpHeaders): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const k of PASSED_HEADERS) if (typeof h[k] === 'string') out[k] = h[k];
  return out;
};

/**
 * A catalog chat model serving `protocol` (its id), or a custom name on the key's own list (the name itself:
 * `custom`; served on both protocols when a channel lists it, as the catalog says).
 */
function chatModel(name: string, principal: AuthPrincipal, protocol: ChatProtocol): { id: string; custom: boolean } {
  const model = resolveModel(name);
  if (!model && principal.keyModels?.includes(name)) {
    // as on the image and video endpoints: a name the key lists, served by a channel that lists it
    if (principal.groupModels && !principal.groupModels.includes(name)) {
      throw new DomainError('permission', `This API key is not allowed to use model '${name}'`, { field: 'model' });
    }
    return { id: name, custom: true };
  }
  if (!model || !model.supportedEndpointTypes.includes(protocol)) {
    throw new DomainError(
      'invalid_request',
      `\`model\`: '${name}' is not a chat model served on this endpoint; GET /v1/models?expand=category&category=chat lists them (\`supported_endpoint_types\` includes '${protocol}')`,
      {
        field: 'model',
        rule: 'chat_model',
      },
    );
  }
  if (!isModelAllowed(model.id, principal.keyModels, principal.groupModels)) {
    throw new DomainError('permission', `This API key is not allowed to use model '${name}'`, { field: 'model' });
  }
  return { id: model.id, custom: false };
}

/** The channels of a model; a custom name only on channels that list it by name (not on catch-all channels). */
async function channelsOf(d: MessagesRouterDeps, m: { id: string; custom: boolean }, group: string) {
  const all = await d.channels.get(m.id, group);
  return m.custom ? all.filter((c) => c.models?.includes(m.id)) : all;
}

/** Which wire protocol a call came in on; both are served by one messages call (one hold, relay and charge). */
type ChatProtocol = 'messages' | 'chat-completions';

/** The protocol's half of a call: what goes upstream, and where (and in which protocol) the answer goes. */
interface Front {
  request: MessagesRequest;
  /** The call to a `messages` channel. */
  body: Buffer;
  version: string;
  headers: Record<string, string>;
  sink: MessagesSink;
  endpoint: string;
  /** The call to an `openai` channel (chat completions), for the model's catalog id. */
  openai: (model: string) => (ch: MessagesChannel) => UpstreamLeg | undefined;
}

function frontOf(protocol: ChatProtocol, req: Request, res: Response): Front {
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  if (protocol === 'chat-completions') {
    // to a messages channel: the request in as a messages body, the answer out through the translating sink
    // (docs/chat.md); to an openai channel: through as it is (openai-chat/openai-legs.ts)
    const { chat, request, body, parsed } = chatCallOf(raw);
    const sink = chatSink(res, { model: chat.model, created: Math.floor(Date.now() / 1000), includeUsage: chat.includeUsage });
    const openai = (model: string) => chatPassLeg(res, raw, parsed, model, chat.includeUsage);
    return { request, body, version: CHAT_UPSTREAM_VERSION, headers: {}, sink, endpoint: 'POST /v1/chat/completions', openai };
  }
  // the vendor's clients read the request id from this header (the upstream's own replaces it on an answer)
  if (req.id) res.setHeader('request-id', req.id);
  const version = parseMessagesVersion(req.headers);
  const request = parseMessagesRequest(raw);
  const openai = (model: string) => messagesToChatLeg(res, raw, model, request.model);
  return { request, body: raw, version, headers: passedHeaders(req.headers), sink: httpSink(res), endpoint: 'POST /v1/messages', openai };
}

/** A messages body that only `openai` channels could serve, and that chat completions cannot carry: 400 naming the field. */
function refuseUncarried(protocol: ChatProtocol, raw: unknown, channels: readonly MessagesChannel[]): void {
  if (protocol !== 'messages' || !channels.every((c) => c.protocol === 'openai') || !Buffer.isBuffer(raw)) return;
  const t = chatBodyOfMessages(JSON.parse(raw.toString('utf8')) as Record<string, unknown>, '');
  if ('problem' in t) {
    throw new DomainError('invalid_request', `\`${t.problem.field}\`: ${t.problem.message}`, { field: t.problem.field, rule: 'upstream:unsupported' });
  }
}

/**
 * POST /v1/messages (spec 4.5) and POST /v1/chat/completions (docs/chat.md): checks (version, body, model,
 * permission, price, channel) → reserve the most the call can cost from the account's credit lease (in memory) →
 * relay → record the actual cost (batched, after the answer). Everything that can reject the request happens
 * before the reservation. The two protocols differ only at the edges (the request in, the answer out).
 */
export function messagesRouter(d: MessagesRouterDeps): Router {
  const router = Router();
  const serve =
    (protocol: ChatProtocol): RequestHandler =>
    async (req, res) => {
      const timing = new CallTiming(req.receivedAt ?? performance.now());
      d.sweeper.poke();
      const front = frontOf(protocol, req, res);
      const { request } = front;
      const principal = principalOf(res);
      const m = chatModel(request.model, principal, protocol);
      const model = m.id;
      const prices = await pricesOf(d, model);
      const channels = await channelsOf(d, m, principal.groupName);
      if (channels.length === 0) throw new DomainError('service_unavailable', `No upstream channel serves model '${request.model}' at the moment`);
      refuseUncarried(protocol, req.body, channels);

      const { openai, ...call } = front;
      const outcome = await serveMessagesCall(d.call, { principal, model, prices, channels, ...call, timing, openai: openai(model) });
      if (outcome.error) throw outcome.error;
    };
  const count: RequestHandler = async (req, res) => {
    const version = parseMessagesVersion(req.headers);
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const request = parseMessagesRequest(raw, { countOnly: true });
    const principal = principalOf(res);
    // counting is a messages-protocol call: `openai` channels have none (the estimate answers then)
    const channels = (await channelsOf(d, chatModel(request.model, principal, 'messages'), principal.groupName)).filter((c) => c.protocol !== 'openai');
    await countTokens(d.call.client, d.call.logger, {
      res,
      request,
      channels,
      gate: d.call.gate,
      version,
      body: raw,
      headers: passedHeaders(req.headers),
      maxAnswerBytes: d.call.limits.maxAnswerBytes,
    });
  };
  // the body as bytes (it goes upstream untouched): 415 for another media type, 413 over the cap (http/json-body.ts)
  const body = jsonBody(d.maxBodyBytes, undefined, d.budget, { bytes: true });
  // mounted at /v1 (app.ts)
  router.post('/messages', ...d.guards, ...body, serve('messages'));
  router.post('/messages/count_tokens', ...d.guards, ...body, count);
  router.post('/chat/completions', ...d.guards, ...body, serve('chat-completions'));
  router.all(['/messages', '/messages/count_tokens', '/chat/completions'], methodNotAllowed(['POST']));
  return router;
}

async function pricesOf(d: MessagesRouterDeps, model: string): Promise<TokenPrices> {
  const found = tokenPricesOf(model, await d.prices.get());
  if ('prices' in found) return found.prices;
  d.call.logger.error({ model, missing: found.missing }, 'chat model not priced');
  throw new DomainError('service_unavailable', `Model '${model}' is temporarily unavailable (model not priced)`);
}
