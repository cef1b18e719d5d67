import Joi from 'joi';
import { DomainError } from '@gmg/errors';
import { CHAT_PROTOCOLS, RESERVED_BODY_FIELDS, TASK_PROTOCOLS } from '@gmg/upstream';

/** Money in the API: a decimal number of currency units, at most 6 decimals (1 unit = 1,000,000 minor). */
const money = () => Joi.number().precision(6).strict(false).max(1_000_000_000);
const modelList = () => Joi.array().items(Joi.string().trim().min(1).max(200)).max(1000).allow(null);
const limit = () => Joi.number().integer().min(1).max(1_000_000).allow(null);
const groupName = () =>
  Joi.string()
    .trim()
    .min(1)
    .max(100)
    .pattern(/^[A-Za-z0-9_.:-]+$/);

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ids are uuids; anything else cannot exist (answered as 404, never a database error). */
export const isUuid = (s: string): boolean => UUID_RE.test(s);

export const createAccountSchema = Joi.object({
  name: Joi.string().trim().min(1).max(200).required(),
  group: groupName(),
  balance: money().min(0),
});

export const topupSchema = Joi.object({
  amount: money().greater(0).required(),
  note: Joi.string().max(500),
});

const keyExpiry = () =>
  Joi.number()
    .integer()
    .custom((v: number, h) => (v * 1000 > Date.now() ? v : h.error('date.future')))
    .messages({ 'date.future': '{{#label}} must be in the future (unix seconds)' })
    .allow(null);

export const createKeySchema = Joi.object({
  account_id: Joi.string().required(),
  name: Joi.string().trim().max(200).allow(''),
  models: modelList(),
  group: groupName().allow(null),
  rps_limit: limit(),
  inflight_limit: limit(),
  max_spend: money().greater(0).allow(null),
  spend_window: Joi.string().valid('day', 'month').allow(null),
  expires_at: keyExpiry(),
}).with('spend_window', 'max_spend');

/**
 * PATCH /api/keys/{id}: the cap and the end date. `max_spend: null` removes the cap (and its window); a
 * `spend_window` alone applies to the key's current cap (ManagementService.updateKey refuses it on an uncapped key).
 */
export const updateKeySchema = Joi.object({
  max_spend: money().greater(0).allow(null),
  spend_window: Joi.string().valid('day', 'month').allow(null),
  expires_at: keyExpiry(),
}).min(1);

/** The secret a rotation replaces keeps working this long (seconds; default an hour, at most 30 days). */
export const rotateKeySchema = Joi.object({
  overlap_seconds: Joi.number()
    .integer()
    .min(0)
    .max(30 * 24 * 3600)
    .default(3600),
});

/** Auth headers come from the channel's key, never from `settings.headers` (settings are echoed; keys never are). */
const AUTH_HEADERS = /^(authorization|proxy-authorization|x-key|x-api-key|api-key|x-goog-api-key|mj-api-secret|cookie)$/i;
/** Headers of the connection itself (framing, hop-by-hop): the HTTP client sets them. */
const TRANSPORT_HEADERS = /^(host|content-length|content-type|transfer-encoding|connection|keep-alive|upgrade|te|trailer|expect|proxy-connection)$/i;
/** A vendor status (`429`) or class (`5xx`) a channel's `status_map` names: errors only (4xx, 5xx). */
const STATUS_KEY = /^([45][0-9]{2}|[45]xx)$/;
/** A bound in ms: at least 100 ms, at most `max`. */
const ms = (max: number) => Joi.number().integer().min(100).max(max);
const channelSettings = Joi.object({
  headers: Joi.object()
    .pattern(
      Joi.string()
        .pattern(/^[A-Za-z0-9-]{1,100}$/, 'header name')
        .custom((v: string, h) => (AUTH_HEADERS.test(v) ? h.error('any.invalid') : TRANSPORT_HEADERS.test(v) ? h.error('any.transport') : v))
        .messages({
          'any.invalid': '{{#label}} is an auth header: the channel key (api_key) carries auth, settings are not secret',
          'any.transport': '{{#label}} is set by the HTTP client (framing and connection headers cannot be overridden)',
        }),
      Joi.string().max(4096),
    )
    .max(50)
    .messages({ 'object.unknown': '{{#label}} is not allowed (an auth, framing or connection header, or not a header name)' }),
  // fixed body parameters: under the request's own; the gateway's own fields (billing reads them) are refused
  body: Joi.object()
    .max(100)
    .keys(Object.fromEntries(RESERVED_BODY_FIELDS.map((k) => [k, Joi.any().forbidden()])))
    .unknown(true)
    .messages({ 'any.unknown': '{{#label}} is set by the gateway (the model, the stream and its usage, the token bound are billed): not overridable' }),
  // an outbound HTTP(S) proxy for every call of the channel; user:password in it are a secret (redacted in answers)
  proxy: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .max(2048),
  timeouts: Joi.object({ connect_ms: ms(60_000), request_ms: ms(1_800_000), poll_ms: ms(300_000) }).min(1),
  status_map: Joi.object()
    .pattern(Joi.string().pattern(STATUS_KEY, 'status (400-599) or class (4xx, 5xx)'), Joi.string().valid('retry', 'failover', 'fail'))
    .max(100)
    .messages({ 'object.unknown': '{{#label}} is not a status 400-599 or a class (4xx, 5xx)' }),
})
  .unknown(true)
  .max(50);

const keySecret = () => Joi.string().min(1).max(4096);
const keyWeight = () => Joi.number().integer().min(0).max(1_000_000);
const channelKey = () => Joi.alternatives().try(keySecret(), Joi.object({ key: keySecret().required(), weight: keyWeight() }));

const channelFields = {
  name: Joi.string().trim().min(1).max(200),
  protocol: Joi.string()
    .trim()
    .valid(...TASK_PROTOCOLS, ...CHAT_PROTOCOLS),
  // public model id -> the vendor's model or endpoint id (a model not named goes upstream under its own name)
  model_map: Joi.object().pattern(Joi.string().min(1).max(200), Joi.string().trim().min(1).max(500)).max(1000),
  settings: channelSettings,
  base_url: Joi.string().uri({ scheme: ['http', 'https'] }),
  api_key: Joi.string().max(4096).allow(''),
  // several keys: each a secret, or {key, weight}; they replace the channel's key set (api_key is the one-key form)
  api_keys: Joi.array().items(channelKey()).min(1).max(100),
  models: modelList(),
  groups: Joi.array().items(groupName()).max(1000).allow(null),
  priority: Joi.number().integer().min(-1_000_000).max(1_000_000),
  weight: Joi.number().integer().min(0).max(1_000_000),
  enabled: Joi.boolean(),
  // messages-protocol channels: the header name the upstream reads the protocol version from
  version_header: Joi.string()
    .trim()
    .pattern(/^[A-Za-z0-9-]+$/, 'header name')
    .max(100),
};
export const createChannelSchema = Joi.object({
  ...channelFields,
  name: channelFields.name.required(),
  base_url: channelFields.base_url.required(),
}).oxor('api_key', 'api_keys');
export const updateChannelSchema = Joi.object(channelFields).min(1).oxor('api_key', 'api_keys');

/** POST /api/channels/{id}/keys: one key (`key`) or several (`keys`). */
export const addChannelKeysSchema = Joi.object({
  key: keySecret(),
  weight: keyWeight(),
  keys: Joi.array().items(channelKey()).min(1).max(100),
}).xor('key', 'keys');

/** POST /api/channels/{id}/test: optionally the model the calls name (default: the channel's first listed model). */
export const testChannelSchema = Joi.object({ model: Joi.string().trim().min(1).max(200) });

/** PATCH /api/channels/{id}/keys/{keyId}: the operator's switch and the key's weight. */
export const updateChannelKeySchema = Joi.object({
  status: Joi.string().valid('active', 'disabled'),
  reason: Joi.string().trim().min(1).max(500),
  weight: keyWeight(),
}).min(1);

const priceItem = Joi.object({
  key: Joi.string().trim().min(1).max(200).required(),
  price: money().min(0).required(),
  description: Joi.string().max(1000).allow(''),
});
export const putPricesSchema = Joi.array().items(priceItem).min(1).max(10_000);

const groupItem = Joi.object({
  name: groupName().required(),
  price_ratio: Joi.number().greater(0).max(1000).precision(4).default(1),
  models: modelList().default(null),
  rps_limit: limit().default(null),
  inflight_limit: limit().default(null),
});
export const putGroupsSchema = Joi.alternatives().try(groupItem, Joi.array().items(groupItem).min(1).max(1000));

export const logsQuerySchema = Joi.object({
  limit: Joi.number().integer().min(1).max(100).default(20),
  cursor: Joi.string().max(500),
  from: Joi.number().integer().min(0),
  to: Joi.number().integer().min(0),
  model: Joi.string().trim().min(1).max(200),
});

export const listKeysQuerySchema = Joi.object({ account_id: Joi.string().required() });

/** Validates and converts; a failure is 400 naming the field. */
export function validate<T>(schema: Joi.Schema, value: unknown, where = 'body'): T {
  const result = schema.validate(value ?? {}, { abortEarly: true, convert: true, stripUnknown: false });
  if (result.error) {
    const d = result.error.details[0];
    const field = d.path.join('.');
    throw new DomainError('invalid_request', `Invalid ${where}${field ? ` field '${field}'` : ''}: ${d.message.replace(/"/g, "'")}`, { field });
  }
  return result.value as T;
}
