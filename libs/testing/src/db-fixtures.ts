import type { NormalizedRequest } from '@gmg/contracts';
import { AccountRepository, ApiKeyRepository, GroupRepository, newTaskId, type AuthPrincipal, type LeasedCall, type NewTask } from '@gmg/db';
import type { DataSource } from 'typeorm';

/** The owner of a test task: an account and one of its API keys. */
export interface TestOwner {
  accountId: string;
  apiKeyId: string;
}

/**
 * A task to hold in tests below the HTTP layer (repositories, billing): a lumen-2-pro image task of `owner` at
 * `price`, a minute to its deadline, a fresh id; `extra` overrides any field.
 */
export function testTask(owner: TestOwner, price: bigint, extra: Partial<NewTask> = {}): NewTask {
  return {
    id: newTaskId(),
    accountId: owner.accountId,
    apiKeyId: owner.apiKeyId,
    model: 'lumen-2-pro',
    requestedModel: 'lumen-2-pro',
    pool: 'image',
    request: { model: 'lumen-2-pro' } as unknown as NormalizedRequest,
    price,
    priceSnapshot: {},
    deadlineAt: new Date(Date.now() + 60_000),
    ...extra,
  };
}

/**
 * A chat call of `owner` that finished (completed) costing `cost`, as the edge's credit-lease book records it: a
 * lumen-chat-1 call with a fresh id, started now; `reserved` is the caller's (the book adds it); `extra` overrides any field.
 */
export function testChatCall(owner: TestOwner, cost: bigint, extra: Partial<Omit<LeasedCall, 'reserved'>> = {}): Omit<LeasedCall, 'reserved'> {
  return {
    id: newTaskId(),
    accountId: owner.accountId,
    apiKeyId: owner.apiKeyId,
    model: 'lumen-chat-1',
    requestedModel: 'lumen-chat-1',
    status: 'completed',
    cost,
    request: {},
    priceSnapshot: {},
    result: null,
    error: null,
    channelId: null,
    startedAt: new Date(),
    ...extra,
  };
}

/** A new account topped up with `balance` (minor units) and an API key of it (the key's default limits). */
export async function fundedOwner(ds: DataSource, name: string, balance: bigint): Promise<TestOwner> {
  const accounts = new AccountRepository(ds);
  const accountId = (await accounts.create({ name })).id;
  await accounts.topup(accountId, balance);
  const apiKeyId = (await new ApiKeyRepository(ds).create({ accountId })).key.id;
  return { accountId, apiKeyId };
}

/**
 * An end-to-end customer: its own group (no fair-use limits, price ratio 1: a channel serving only that group is the
 * only one its requests reach), an account funded with `balance`, and the secret of a key.
 */
export async function fundedKeyInGroup(ds: DataSource, group: string, balance = 1_000_000_000n): Promise<{ accountId: string; key: string }> {
  await new GroupRepository(ds).upsert({ name: group, priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
  const accounts = new AccountRepository(ds);
  const a = await accounts.create({ name: `e2e-${group}`, groupName: group });
  await accounts.topup(a.id, balance);
  return { accountId: a.id, key: (await new ApiKeyRepository(ds).create({ accountId: a.id })).secret };
}

/** The management API as an operator calls it: `(method, path, body?)` with the admin token, JSON both ways. */
export function adminApi(base: () => string, token: string) {
  return async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const r = await fetch(`${base()}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
}

/** An authenticated key as the edge's middleware sees it: key k1 of account a1 in group `default`, no limits; `extra` overrides any field. */
export function testPrincipal(extra: Partial<AuthPrincipal> = {}): AuthPrincipal {
  return {
    keyId: 'k1',
    accountId: 'a1',
    groupName: 'default',
    keyModels: null,
    groupModels: null,
    priceRatio: 1,
    rpsLimit: null,
    inflightLimit: null,
    cap: null,
    expiresAt: null,
    rotatedSecretValidUntil: null,
    ...extra,
  };
}
