import type { DataSource } from 'typeorm';
import { fromMinor, toMinor } from '@gmg/contracts';
import {
  AccountRepository,
  ApiKeyRepository,
  ChannelRepository,
  GroupRepository,
  PriceRepository,
  type AccountRecord,
  type ApiKeyRecord,
  type ChannelInput,
  type ChannelRecord,
  type GroupRecord,
  type PriceRecord,
  LogsRepository,
  type ChannelKeyRecord,
  type HealthRecord,
  type HealthStatus,
  type KeyCapsPatch,
  type KeyInput,
} from '@gmg/db';
import { DomainError } from '@gmg/errors';
import { checkChannelSettings, isRedactedFormOf, redactProxyUrl, type ChannelSettings } from '@gmg/upstream';
import { queryLogs, type LogsPage } from './logs.query';
import {
  createAccountSchema,
  createChannelSchema,
  createKeySchema,
  rotateKeySchema,
  isUuid,
  listKeysQuerySchema,
  logsQuerySchema,
  putGroupsSchema,
  putPricesSchema,
  topupSchema,
  updateChannelSchema,
  updateKeySchema,
  validate,
} from './management.schemas';

/** Views: what the management API and the admin CLI show. snake_case, money in currency units, never a secret. */
export interface AccountView {
  id: string;
  name: string;
  group: string;
  /** available + held. */
  balance: number;
  available: number;
  held: number;
  spent: number;
  created_at: number;
}
export interface KeyView {
  id: string;
  account_id: string;
  name: string;
  prefix: string;
  models: string[] | null;
  group: string | null;
  rps_limit: number | null;
  inflight_limit: number | null;
  status: 'active' | 'revoked';
  created_at: number;
  revoked_at: number | null;
  /** Spending cap (currency units) over the key's life, or per `spend_window`; null = none. */
  max_spend: number | null;
  spend_window: 'day' | 'month' | null;
  expires_at: number | null;
  rotated_at: number | null;
  /** Until when the secret the last rotation replaced is accepted (null: never rotated). */
  previous_secret_valid_until: number | null;
  /** A capped key's spend in the current window (the hold statement's count: held and captured); null: no cap. */
  spent: number | null;
}
export interface ChannelView {
  id: string;
  name: string;
  protocol: string;
  base_url: string;
  models: string[] | null;
  groups: string[] | null;
  priority: number;
  weight: number;
  enabled: boolean;
  /** Messages-protocol channels: the header the upstream reads the protocol version from. */
  version_header: string;
  /** Public model id → the vendor's name for it. */
  model_map: Record<string, string>;
  /** Protocol settings (extra headers, fixed body parameters, protocol options); never secrets. */
  settings: Record<string, unknown>;
  /** Health (shared by every replica): `active`, `cooling` until `cooling_until`, `disabled` with `disabled_reason`. */
  status: HealthStatus;
  cooling_until: number | null;
  disabled_reason: string | null;
  last_error: string | null;
  last_error_at: number | null;
  /** Its keys (`[]`: its one `api_key`), each with its health; never a secret, only `hint` (its last 4 characters). */
  keys: ChannelKeyView[];
}
export interface ChannelKeyView {
  id: string;
  hint: string;
  weight: number;
  status: HealthStatus;
  cooling_until: number | null;
  disabled_reason: string | null;
  last_error: string | null;
  last_error_at: number | null;
}
export interface PriceView {
  key: string;
  price: number;
  description: string;
}
export interface GroupView {
  name: string;
  price_ratio: number;
  models: string[] | null;
  rps_limit: number | null;
  inflight_limit: number | null;
}

const secs = (d: Date): number => Math.floor(d.getTime() / 1000);
const secsOrNull = (d: Date | null | undefined): number | null => (d ? secs(d) : null);

const healthView = (h: HealthRecord | undefined) => ({
  status: h?.status ?? 'active',
  cooling_until: secsOrNull(h?.coolingUntil),
  disabled_reason: h?.disabledReason ?? null,
  last_error: h?.lastError ?? null,
  last_error_at: secsOrNull(h?.lastErrorAt),
});
export const channelKeyView = (k: ChannelKeyRecord): ChannelKeyView => ({ id: k.id, hint: k.hint, weight: k.weight, ...healthView(k) });

export const accountView = (a: AccountRecord): AccountView => ({
  id: a.id,
  name: a.name,
  group: a.groupName,
  balance: fromMinor(a.available + a.held),
  available: fromMinor(a.available),
  held: fromMinor(a.held),
  spent: fromMinor(a.spent),
  created_at: secs(a.createdAt),
});
export const keyView = (k: ApiKeyRecord): KeyView => ({
  id: k.id,
  account_id: k.accountId,
  name: k.name,
  prefix: k.prefix,
  models: k.models,
  group: k.groupName,
  rps_limit: k.rpsLimit,
  inflight_limit: k.inflightLimit,
  status: k.status,
  created_at: secs(k.createdAt),
  revoked_at: k.revokedAt ? secs(k.revokedAt) : null,
  max_spend: k.cap ? fromMinor(k.cap.maxSpend) : null,
  spend_window: k.cap?.window ?? null,
  expires_at: k.expiresAt ? secs(k.expiresAt) : null,
  rotated_at: k.rotatedAt ? secs(k.rotatedAt) : null,
  previous_secret_valid_until: k.previousValidUntil ? secs(k.previousValidUntil) : null,
  spent: k.spent === null ? null : fromMinor(k.spent),
});
export const channelView = (c: ChannelRecord): ChannelView => ({
  id: c.id,
  name: c.name,
  protocol: c.protocol,
  base_url: c.baseUrl,
  models: c.models,
  groups: c.groups,
  priority: c.priority,
  weight: c.weight,
  enabled: c.enabled,
  version_header: c.versionHeader ?? 'anthropic-version',
  model_map: c.modelMap ?? {},
  settings: settingsView(c.settings ?? {}),
  ...healthView(c.health),
  keys: (c.keys ?? []).map(channelKeyView),
});
const priceView = (p: PriceRecord): PriceView => ({ key: p.key, price: fromMinor(p.unitPrice), description: p.description });
const groupView = (g: GroupRecord): GroupView => ({
  name: g.name,
  price_ratio: g.priceRatio,
  models: g.models,
  rps_limit: g.rpsLimit,
  inflight_limit: g.inflightLimit,
});

/** Settings as answers show them: a proxy's credentials redacted (write-only, like keys). */
const settingsView = (s: Record<string, unknown>): Record<string, unknown> => (typeof s.proxy === 'string' ? { ...s, proxy: redactProxyUrl(s.proxy) } : s);

/**
 * Settings sent back as an answer showed them (the proxy's password as `***`) keep the stored proxy: a read, edit,
 * write cycle does not overwrite the secret with its redacted form.
 */
function keepProxySecret(next: Record<string, unknown> | undefined, stored: Record<string, unknown> | undefined): void {
  if (next && stored && isRedactedFormOf(next.proxy, stored.proxy)) next.proxy = stored.proxy;
}

/** The protocol's own check of a channel's settings: 400 naming `settings.<field>`. */
function checkSettings(protocol: string, settings: unknown): void {
  const problem = settings ? checkChannelSettings(protocol, settings as ChannelSettings) : undefined;
  if (problem) {
    const field = `settings.${problem.field}`;
    throw new DomainError('invalid_request', `Invalid body field '${field}': ${problem.message}`, { field });
  }
}

const CHANNEL_FIELDS: Record<string, keyof ChannelInput> = {
  name: 'name',
  protocol: 'protocol',
  base_url: 'baseUrl',
  api_key: 'apiKey',
  api_keys: 'apiKeys',
  models: 'models',
  groups: 'groups',
  priority: 'priority',
  weight: 'weight',
  enabled: 'enabled',
  version_header: 'versionHeader',
  model_map: 'modelMap',
  settings: 'settings',
};
/** A key as the API takes it: its secret, or `{key, weight}`. */
export type KeyBody = string | { key: string; weight?: number };
export const keyInputs = (keys: readonly KeyBody[]): KeyInput[] =>
  keys.map((k) => (typeof k === 'string' ? { secret: k } : { secret: k.key, weight: k.weight }));

function toChannelInput(body: Record<string, unknown>): Partial<ChannelInput> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) if (k in CHANNEL_FIELDS) out[CHANNEL_FIELDS[k]] = k === 'api_keys' ? keyInputs(v as KeyBody[]) : v;
  return out as Partial<ChannelInput>;
}

/**
 * The operator's operations, shared by the HTTP management API and the admin CLI. Inputs are the API bodies
 * (validated here, 400 naming the field); missing things are 404.
 */
export class ManagementService {
  private readonly accounts: AccountRepository;
  private readonly keys: ApiKeyRepository;
  private readonly channels: ChannelRepository;
  private readonly prices: PriceRepository;
  private readonly groups: GroupRepository;
  private readonly activity: LogsRepository;

  constructor(ds: DataSource) {
    this.accounts = new AccountRepository(ds);
    this.keys = new ApiKeyRepository(ds);
    this.channels = new ChannelRepository(ds);
    this.prices = new PriceRepository(ds);
    this.groups = new GroupRepository(ds);
    this.activity = new LogsRepository(ds);
  }

  private async requireGroup(name: string, field: string): Promise<void> {
    if (!(await this.groups.get(name)))
      throw new DomainError('invalid_request', `Unknown group '${name}' in field '${field}'; create it with PUT /api/groups first`, { field });
  }

  private async requireAccount(id: string): Promise<AccountRecord> {
    const a = isUuid(id) ? await this.accounts.get(id) : null;
    if (!a) throw new DomainError('not_found', `Account ${id} not found`);
    return a;
  }

  async createAccount(body: unknown): Promise<AccountView> {
    const b = validate<{ name: string; group?: string; balance?: number }>(createAccountSchema, body);
    if (b.group !== undefined) await this.requireGroup(b.group, 'group');
    const created = await this.accounts.create({ name: b.name, groupName: b.group });
    const minor = b.balance === undefined ? 0n : toMinor(b.balance);
    if (minor === 0n) return accountView(created);
    return accountView((await this.accounts.topup(created.id, minor, { reason: 'initial balance' }))!);
  }

  async getAccount(id: string): Promise<AccountView> {
    return accountView(await this.requireAccount(id));
  }

  /** With an Idempotency-Key, a retried top-up credits once (`replayed` tells the route to answer 200, not 201). */
  async topup(id: string, body: unknown, idempotencyKey?: string): Promise<{ account: AccountView; replayed: boolean }> {
    const b = validate<{ amount: number; note?: string }>(topupSchema, body);
    await this.requireAccount(id);
    const minor = toMinor(b.amount);
    if (minor <= 0n) throw new DomainError('invalid_request', "Invalid body field 'amount': must be at least 0.000001", { field: 'amount' });
    const meta = b.note ? { note: b.note } : {};
    if (idempotencyKey === undefined) {
      const a = await this.accounts.topup(id, minor, meta);
      if (!a) throw new DomainError('not_found', `Account ${id} not found`);
      return { account: accountView(a), replayed: false };
    }
    if (idempotencyKey.length === 0 || idempotencyKey.length > 255) {
      throw new DomainError('invalid_request', 'Idempotency-Key must be 1 to 255 characters', { field: 'Idempotency-Key' });
    }
    const r = await this.accounts.topupOnce(id, minor, idempotencyKey, meta);
    if (r === null) throw new DomainError('not_found', `Account ${id} not found`);
    if (r === 'mismatch') {
      throw new DomainError('idempotency_mismatch', 'This Idempotency-Key was already used for a top-up of another amount; use a new key', {
        field: 'Idempotency-Key',
      });
    }
    return { account: accountView(r.account), replayed: r.replayed };
  }

  /** The secret is in the answer of this call only; it is stored hashed. */
  async createKey(body: unknown): Promise<KeyView & { key: string }> {
    const b = validate<{
      account_id: string;
      name?: string;
      models?: string[] | null;
      group?: string | null;
      rps_limit?: number | null;
      inflight_limit?: number | null;
      max_spend?: number | null;
      spend_window?: 'day' | 'month' | null;
      expires_at?: number | null;
    }>(createKeySchema, body);
    await this.requireAccount(b.account_id);
    if (b.group) await this.requireGroup(b.group, 'group');
    const { key, secret } = await this.keys.create({
      accountId: b.account_id,
      name: b.name,
      models: b.models ?? null,
      groupName: b.group ?? null,
      rpsLimit: b.rps_limit ?? null,
      inflightLimit: b.inflight_limit ?? null,
      cap: b.max_spend ? { maxSpend: toMinor(b.max_spend), window: b.spend_window ?? null } : null,
      expiresAt: b.expires_at ? new Date(b.expires_at * 1000) : null,
    });
    return { ...keyView(key), key: secret };
  }

  /** A new secret under the same key id (shown only in this answer); the replaced one works `overlap_seconds` more. */
  async rotateKey(id: string, body: unknown): Promise<KeyView & { key: string }> {
    const b = validate<{ overlap_seconds: number }>(rotateKeySchema, body);
    const before = isUuid(id) ? await this.keys.get(id) : null;
    if (!before) throw new DomainError('not_found', `Key ${id} not found`);
    const rotated = await this.keys.rotate(id, b.overlap_seconds);
    if (!rotated) throw new DomainError('conflict', `Key ${id} is revoked: a revoked key cannot be rotated`);
    return { ...keyView(rotated.key), key: rotated.secret };
  }

  async listKeys(query: unknown): Promise<KeyView[]> {
    const q = validate<{ account_id: string }>(listKeysQuerySchema, query, 'query');
    await this.requireAccount(q.account_id);
    return (await this.keys.listForAccount(q.account_id)).map(keyView);
  }

  async getKey(id: string): Promise<KeyView> {
    const k = isUuid(id) ? await this.keys.get(id) : null;
    if (!k) throw new DomainError('not_found', `Key ${id} not found`);
    return keyView(k);
  }

  /**
   * Changes a key's cap (`max_spend`, `spend_window`) and end date (`expires_at`); 400 naming the field. The new cap
   * applies from the next hold (each replica reads it when its cached key expires; the caller clears this one's).
   */
  async updateKey(id: string, body: unknown): Promise<KeyView> {
    const b = validate<{ max_spend?: number | null; spend_window?: 'day' | 'month' | null; expires_at?: number | null }>(updateKeySchema, body);
    const current = isUuid(id) ? await this.keys.get(id) : null;
    if (!current) throw new DomainError('not_found', `Key ${id} not found`);
    const patch: KeyCapsPatch = {};
    if (b.max_spend !== undefined || b.spend_window !== undefined) {
      const maxSpend = b.max_spend === undefined ? (current.cap?.maxSpend ?? null) : b.max_spend === null ? null : toMinor(b.max_spend);
      const window = b.spend_window === undefined ? (current.cap?.window ?? null) : b.spend_window;
      if (maxSpend === null && b.spend_window) {
        throw new DomainError('invalid_request', "Invalid body field 'spend_window': a window needs a cap (max_spend) on the key", { field: 'spend_window' });
      }
      patch.cap = maxSpend === null ? null : { maxSpend, window };
    }
    if (b.expires_at !== undefined) patch.expiresAt = b.expires_at === null ? null : new Date(b.expires_at * 1000);
    const k = await this.keys.updateCaps(id, patch);
    if (!k) throw new DomainError('not_found', `Key ${id} not found`);
    return keyView(k);
  }

  /** Idempotent: revoking a revoked key answers the key as it is. */
  async revokeKey(id: string): Promise<{ key: KeyView; changed: boolean }> {
    if (!isUuid(id) || !(await this.keys.get(id))) throw new DomainError('not_found', `Key ${id} not found`);
    const changed = await this.keys.revoke(id);
    return { key: keyView((await this.keys.get(id))!), changed };
  }

  async listChannels(): Promise<ChannelView[]> {
    return (await this.channels.list()).map(channelView);
  }

  async createChannel(body: unknown): Promise<ChannelView> {
    const b = validate<Record<string, unknown>>(createChannelSchema, body);
    checkSettings((b.protocol as string | undefined) ?? 'gateway', b.settings);
    return channelView(await this.channels.create(toChannelInput(b) as ChannelInput));
  }

  async updateChannel(id: string, body: unknown): Promise<ChannelView> {
    const b = validate<Record<string, unknown>>(updateChannelSchema, body);
    if (b.settings !== undefined || b.protocol !== undefined) {
      const current = isUuid(id) ? (await this.channels.list()).find((c) => c.id === id) : undefined;
      if (current) checkSettings((b.protocol as string | undefined) ?? current.protocol, b.settings ?? current.settings);
      keepProxySecret(b.settings as Record<string, unknown> | undefined, current?.settings);
    }
    const c = isUuid(id) ? await this.channels.update(id, toChannelInput(b)) : null;
    if (!c) throw new DomainError('not_found', `Channel ${id} not found`);
    return channelView(c);
  }

  async listPrices(): Promise<PriceView[]> {
    return (await this.prices.list()).map(priceView);
  }

  /** Upserts the given prices (others stay); answers the whole table. */
  async putPrices(body: unknown): Promise<PriceView[]> {
    const list = validate<Array<{ key: string; price: number; description?: string }>>(putPricesSchema, body);
    await this.prices.upsertMany(list.map((p) => ({ key: p.key, unitPrice: toMinor(p.price), description: p.description ?? '' })));
    return this.listPrices();
  }

  async listGroups(): Promise<GroupView[]> {
    return (await this.groups.list()).map(groupView);
  }

  /** Creates or replaces one group (or a list); omitted fields take their defaults (ratio 1, no limits). */
  async putGroups(body: unknown): Promise<GroupView[]> {
    const v = validate<GroupView | GroupView[]>(putGroupsSchema, body);
    const out: GroupView[] = [];
    for (const g of Array.isArray(v) ? v : [v]) {
      out.push(
        groupView(
          await this.groups.upsert({
            name: g.name,
            priceRatio: g.price_ratio,
            models: g.models,
            rpsLimit: g.rps_limit,
            inflightLimit: g.inflight_limit,
          }),
        ),
      );
    }
    return out;
  }

  async balance(accountId: string): Promise<AccountView & { account_id: string }> {
    const a = await this.requireAccount(accountId);
    return { account_id: a.id, ...accountView(a) };
  }

  async logs(accountId: string, query: unknown): Promise<LogsPage> {
    const q = validate<{ limit: number; cursor?: string; from?: number; to?: number; model?: string }>(logsQuerySchema, query, 'query');
    return queryLogs(this.activity, { accountId, ...q });
  }
}
