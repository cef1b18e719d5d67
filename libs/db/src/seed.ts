import { readFile } from 'node:fs/promises';
import type { DataSource } from 'typeorm';
import { toMinor } from '@gmg/contracts';
import { hashApiKey } from './ids';
import { AccountRepository } from './repositories/account.repository';
import { ApiKeyRepository } from './repositories/api-key.repository';
import { PriceRepository } from './repositories/price.repository';
import type { Row } from './repositories/sql';

/** Fixed id of the demo account so the seed is idempotent. */
export const DEMO_ACCOUNT_ID = '00000000-0000-4000-8000-000000000001';
export const DEMO_CHANNEL_NAME = 'upstream-sim';
/**
 * The demo's channels to the simulator: one per protocol it speaks (name, protocol, path under its base, enabled).
 * The vendor-protocol ones (docs/upstreams.md) start disabled: an operator enables one to try that protocol
 * (`npm run admin -- channels update <id> --enabled`), and the demo's own traffic stays on `gateway` until then.
 */
const DEMO_CHANNELS = [
  [DEMO_CHANNEL_NAME, 'gateway', '', true],
  [`${DEMO_CHANNEL_NAME}-messages`, 'messages', '', true],
  [`${DEMO_CHANNEL_NAME}-fal`, 'fal', '/fal', false],
  [`${DEMO_CHANNEL_NAME}-replicate`, 'replicate', '/replicate', false],
  [`${DEMO_CHANNEL_NAME}-openai`, 'openai', '/openai', false],
  [`${DEMO_CHANNEL_NAME}-bfl`, 'bfl', '/bfl', false],
  [`${DEMO_CHANNEL_NAME}-kling`, 'kling', '/kling', false],
  [`${DEMO_CHANNEL_NAME}-ark`, 'ark', '/ark', false],
  [`${DEMO_CHANNEL_NAME}-gemini`, 'gemini', '/gemini', false],
  [`${DEMO_CHANNEL_NAME}-dashscope`, 'dashscope', '/dashscope', false],
  [`${DEMO_CHANNEL_NAME}-runway`, 'runway', '/runway', false],
  [`${DEMO_CHANNEL_NAME}-mj-proxy`, 'mj-proxy', '/mj-proxy', false],
] as const;

export interface DemoSeed {
  apiKey: string;
  balanceMinor: bigint;
  channelBaseUrl: string;
  channelApiKey?: string;
}

/**
 * Idempotent: the demo account (topped up to the balance once), the demo key (imported by its secret) and the
 * channels to the simulator, tasks and chat (base URL kept current).
 */
export async function seedDemo(ds: DataSource, s: DemoSeed): Promise<{ accountId: string; apiKey: string }> {
  const accounts = new AccountRepository(ds);
  if (!(await accounts.get(DEMO_ACCOUNT_ID))) {
    await accounts.create({ id: DEMO_ACCOUNT_ID, name: 'demo' });
    if (s.balanceMinor > 0n) await accounts.topup(DEMO_ACCOUNT_ID, s.balanceMinor, { reason: 'demo seed' });
  }
  const known: Row[] = await ds.query(`SELECT id FROM api_keys WHERE key_hash = $1`, [hashApiKey(s.apiKey)]);
  if (known.length === 0) {
    await new ApiKeyRepository(ds).create({ accountId: DEMO_ACCOUNT_ID, name: 'demo', secret: s.apiKey });
  }
  // the simulator speaks every protocol: tasks (`gateway`), chat (`messages`, POST /v1/messages), the vendors' own
  const base = s.channelBaseUrl.replace(/\/+$/, '');
  for (const [name, protocol, suffix, enabled] of DEMO_CHANNELS) {
    const ch: Row[] = await ds.query(`SELECT id FROM channels WHERE name = $1`, [name]);
    // a vendor mode checks its own auth header for a non-empty key: the simulator's key, or a placeholder
    const vendorKey = s.channelApiKey || (suffix ? 'demo-vendor-key' : '');
    // Kling's key is `<access key>|<secret key>`: the simulator checks the token's signature with its own key
    const key = protocol === 'kling' ? `demo-access|${vendorKey}` : vendorKey;
    if (ch.length === 0) {
      await ds.query(`INSERT INTO channels (name, protocol, base_url, api_key, enabled) VALUES ($1,$2,$3,$4,$5)`, [
        name,
        protocol,
        base + suffix,
        key,
        enabled,
      ]);
    } else {
      await ds.query(`UPDATE channels SET base_url = $2, api_key = $3, updated_at = now() WHERE name = $1`, [name, base + suffix, key]);
    }
  }
  return { accountId: DEMO_ACCOUNT_ID, apiKey: s.apiKey };
}

/** Loads `[{key, price, description}]` (price in currency units) into the prices table; returns the count. */
export async function loadPrices(ds: DataSource, filePath: string): Promise<number> {
  const list = JSON.parse(await readFile(filePath, 'utf8')) as Array<{ key: string; price: number; description?: string }>;
  if (!Array.isArray(list)) throw new Error(`${filePath}: expected an array of {key, price, description}`);
  await new PriceRepository(ds).upsertMany(list.map((p) => ({ key: p.key, unitPrice: toMinor(p.price), description: p.description ?? '' })));
  return list.length;
}
