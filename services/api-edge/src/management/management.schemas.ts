import Joi from 'joi';
import { DomainError } from '@gmg/errors';
import { CHAT_PROTOCOLS, TASK_PROTOCOLS } from '@gmg/upstream';

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
const channelSettings = Joi.object({
  headers: Joi.object()
    .pattern(
      Joi.string()
        .pattern(/^[A-Za-z0-9-]{1,100}$/, 'header name')
        .custom((v: string, h) => (AUTH_HEADERS.test(v) ? h.error('any.invalid') : v))
        .messages({ 'any.invalid': '{{#label}} is an auth header: the channel key (api_key) carries auth, settings are not secret' }),
      Joi.string().max(4096),
    )
    .max(50),
  body: Joi.object().max(100),
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
