import type { DataSource } from 'typeorm';
import { resolveModel, validateRequest, type NormalizedRequest } from '@gmg/contracts';
import { AccountRepository, ApiKeyRepository, ChannelRepository, TaskRepository, newTaskId, type TaskRecord } from '@gmg/db';

export interface SeededAccount {
  accountId: string;
  apiKeyId: string;
}

export async function seedAccount(ds: DataSource, balanceMinor = 1_000_000n): Promise<SeededAccount> {
  const account = await new AccountRepository(ds).create({ name: `acct-${Math.random().toString(36).slice(2, 8)}` });
  await new AccountRepository(ds).topup(account.id, balanceMinor, { reason: 'test' });
  const { key } = await new ApiKeyRepository(ds).create({ accountId: account.id, name: 'test' });
  return { accountId: account.id, apiKeyId: key.id };
}

export async function seedChannel(
  ds: DataSource,
  baseUrl: string,
  apiKey: string,
  extra: { name?: string; priority?: number; settings?: Record<string, unknown> } = {},
): Promise<string> {
  const ch = await new ChannelRepository(ds).create({
    name: extra.name ?? `ch-${Math.random().toString(36).slice(2, 8)}`,
    baseUrl,
    apiKey,
    priority: extra.priority ?? 0,
    ...(extra.settings ? { settings: extra.settings } : {}),
  });
  return ch.id;
}

export const TEST_MODEL = 'lumen-2-flex';

/** A request as the edge stores it: validated and normalized by the model's own contract. */
export function lumenRequest(prompt: string, model = TEST_MODEL, extra: Record<string, unknown> = {}): NormalizedRequest {
  const out = validateRequest(resolveModel(model)!, { model, prompt, ...extra }, model);
  if (!out.ok) throw new Error(`test request rejected: ${out.violation.message}`);
  return out.value;
}

/** A pending lumen-2-flex task with its hold, as the edge creates it. */
export async function seedTask(
  ds: DataSource,
  a: SeededAccount,
  prompt: string,
  opts: { price?: bigint; deadlineMs?: number; model?: string; fields?: Record<string, unknown> } = {},
): Promise<TaskRecord> {
  const model = opts.model ?? TEST_MODEL;
  return new TaskRepository(ds).createWithHold({
    id: newTaskId(),
    accountId: a.accountId,
    apiKeyId: a.apiKeyId,
    model,
    requestedModel: model,
    pool: 'image',
    request: lumenRequest(prompt, model, opts.fields),
    price: opts.price ?? 1000n,
    priceSnapshot: {},
    deadlineAt: new Date(Date.now() + (opts.deadlineMs ?? 60_000)),
  });
}
