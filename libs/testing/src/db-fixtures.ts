import type { NormalizedRequest } from '@gmg/contracts';
import { AccountRepository, ApiKeyRepository, newTaskId, type AuthPrincipal, type LeasedCall, type NewTask } from '@gmg/db';
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
