/**
 * Operator CLI: the management API's operations without HTTP, straight to Postgres (DATABASE_URL).
 * Usage: npm run admin -- <group> <command> [args] [--flags]   (npm run admin -- help)
 * Prints JSON on stdout; exits 1 on an error, 2 on bad usage.
 */
import { parseArgs } from 'node:util';
import { createDataSource, loadPrices } from '@gmg/db';
import { isDomainError } from '@gmg/errors';
import { createUpstreamAdapters, MessagesUpstreamClient } from '@gmg/upstream';
import { ChannelKeysService } from '../services/api-edge/src/management/channel-keys.service';
import { ManagementService } from '../services/api-edge/src/management/management.service';

const USAGE = `Usage: npm run admin -- <command> [arguments] [--flags]   (in the image: node dist/scripts/admin.js <command> …)

Money is a decimal number of currency units. Database: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gmg).

  accounts create --name <name> [--group <group>] [--balance <amount>]
  accounts show <account_id>
  accounts topup <account_id> <amount> [--note <text>]

  keys create --account <account_id> [--name <name>] [--models a,b] [--group <group>] [--rps <n>] [--inflight <n>]
              [--max-spend <amount>] [--spend-window day|month] [--expires-at <unix seconds>]
                                      (the secret is printed once; no --spend-window: the cap is over the key's life)
  keys list <account_id>
  keys revoke <key_id>                (other replicas stop accepting it within AUTH_CACHE_TTL_MS, at most 5 s)
  keys rotate <key_id> [--overlap <seconds>]
                                      (a new secret under the same id, printed once; the old one works --overlap
                                       seconds more, default 3600)

  channels list
  channels add --name <name> --base-url <url> [--api-key <key> | --api-keys k1,k2,…] [--protocol gateway] [--models a,b]
               [--groups a,b] [--priority <n>] [--weight <n>] [--disabled]
               [--model-map '{"lumen-2-pro":"fal-ai/flux-pro/v1.1"}'] [--settings '{"headers":{…},"body":{…}}']
  channels update <channel_id> [any flag of add] [--enabled | --disabled]
                                      (--api-key / --api-keys replace the channel's whole key set)
  channels keys <channel_id>          (ids, hints, weight and health of its keys; never a secret)
  channels key-add <channel_id> --key <secret> [--weight <n>]
  channels key-disable <channel_id> <key_id> [--reason <text>]   (an operator's disable: never probed back)
  channels key-enable <channel_id> <key_id>
  channels key-remove <channel_id> <key_id>
  channels test <channel_id> [--model <model>]
                                      (one real, minimal call per key: a one-token message on chat channels, the
                                      poll of an unknown task id on task protocols; docs/management-api.md)

  prices list
  prices load <file.json>             ([{key, price, description}], e.g. infra/prices.json)
  prices set <key> <price> [--description <text>]

  groups list
  groups set <name> [--ratio <r>] [--models a,b|none] [--rps <n>|none] [--inflight <n>|none]
                                      (fields not given keep their current value)
`;

class UsageError extends Error {}

const OPTIONS = {
  name: { type: 'string' },
  group: { type: 'string' },
  balance: { type: 'string' },
  note: { type: 'string' },
  account: { type: 'string' },
  models: { type: 'string' },
  rps: { type: 'string' },
  inflight: { type: 'string' },
  'base-url': { type: 'string' },
  'api-key': { type: 'string' },
  'api-keys': { type: 'string' },
  key: { type: 'string' },
  reason: { type: 'string' },
  model: { type: 'string' },
  'max-spend': { type: 'string' },
  'spend-window': { type: 'string' },
  'expires-at': { type: 'string' },
  overlap: { type: 'string' },
  'model-map': { type: 'string' },
  settings: { type: 'string' },
  protocol: { type: 'string' },
  groups: { type: 'string' },
  priority: { type: 'string' },
  weight: { type: 'string' },
  enabled: { type: 'boolean' },
  disabled: { type: 'boolean' },
  ratio: { type: 'string' },
  description: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Flags = Partial<Record<keyof typeof OPTIONS, string | boolean>>;

/** Numbers stay numbers for the API's validation (which names the field when they are wrong). */
const num = (v: string | boolean | undefined): number | string | undefined =>
  typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v)) ? Number(v) : (v as string | undefined);
const list = (v: string | boolean | undefined): string[] | null | undefined =>
  typeof v !== 'string'
    ? undefined
    : v === 'none'
      ? null
      : v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
const nullable = (v: string | boolean | undefined): number | string | null | undefined => (v === 'none' ? null : num(v));

/** Drops undefined fields so "not given" differs from "set to null". */
const defined = (o: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

function need(pos: string[], i: number, what: string): string {
  if (pos[i] === undefined) throw new UsageError(`missing <${what}>`);
  return pos[i];
}

function channelBody(f: Flags): Record<string, unknown> {
  return defined({
    name: f.name,
    base_url: f['base-url'],
    api_key: f['api-key'],
    api_keys: list(f['api-keys']),
    protocol: f.protocol,
    models: list(f.models),
    groups: list(f.groups),
    priority: num(f.priority),
    weight: num(f.weight),
    enabled: f.disabled ? false : f.enabled ? true : undefined,
    model_map: jsonFlag(f['model-map'], 'model-map'),
    settings: jsonFlag(f.settings, 'settings'),
  });
}

/** A JSON object given on the command line (`--model-map`, `--settings`). */
function jsonFlag(v: string | boolean | undefined, name: string): unknown {
  if (typeof v !== 'string') return undefined;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    throw new UsageError(`--${name} must be a JSON object, e.g. --${name} '{"a":"b"}'`);
  }
}

async function run(svc: ManagementService, keys: ChannelKeysService, loadFile: (p: string) => Promise<number>, pos: string[], f: Flags): Promise<unknown> {
  const [group, cmd] = pos;
  switch (`${group} ${cmd}`) {
    case 'accounts create':
      return svc.createAccount(defined({ name: f.name, group: f.group, balance: num(f.balance) }));
    case 'accounts show':
      return svc.getAccount(need(pos, 2, 'account_id'));
    case 'accounts topup':
      return svc.topup(need(pos, 2, 'account_id'), defined({ amount: num(need(pos, 3, 'amount')), note: f.note }));
    case 'keys create':
      return svc.createKey(
        defined({
          account_id: f.account,
          name: f.name,
          models: list(f.models),
          group: f.group,
          rps_limit: num(f.rps),
          inflight_limit: num(f.inflight),
          max_spend: num(f['max-spend']),
          spend_window: f['spend-window'],
          expires_at: num(f['expires-at']),
        }),
      );
    case 'keys rotate':
      return svc.rotateKey(need(pos, 2, 'key_id'), defined({ overlap_seconds: num(f.overlap) }));
    case 'keys list':
      return svc.listKeys({ account_id: need(pos, 2, 'account_id') });
    case 'keys revoke':
      return (await svc.revokeKey(need(pos, 2, 'key_id'))).key;
    case 'channels list':
      return svc.listChannels();
    case 'channels add':
      return svc.createChannel(channelBody(f));
    case 'channels update':
      return svc.updateChannel(need(pos, 2, 'channel_id'), channelBody(f));
    case 'channels keys':
      return keys.list(need(pos, 2, 'channel_id'));
    case 'channels key-add':
      return keys.add(need(pos, 2, 'channel_id'), defined({ key: f.key, weight: num(f.weight) }));
    case 'channels key-disable':
      return keys.update(need(pos, 2, 'channel_id'), need(pos, 3, 'key_id'), defined({ status: 'disabled', reason: f.reason }));
    case 'channels key-enable':
      return keys.update(need(pos, 2, 'channel_id'), need(pos, 3, 'key_id'), { status: 'active' });
    case 'channels key-remove':
      await keys.remove(need(pos, 2, 'channel_id'), need(pos, 3, 'key_id'));
      return { removed: pos[3] };
    case 'channels test':
      return keys.test(need(pos, 2, 'channel_id'), defined({ model: f.model }));
    case 'prices list':
      return svc.listPrices();
    case 'prices load': {
      const n = await loadFile(need(pos, 2, 'file'));
      return { loaded: n, prices: await svc.listPrices() };
    }
    case 'prices set':
      return svc.putPrices([defined({ key: need(pos, 2, 'key'), price: num(need(pos, 3, 'price')), description: f.description })]);
    case 'groups list':
      return svc.listGroups();
    case 'groups set': {
      const name = need(pos, 2, 'name');
      const current = (await svc.listGroups()).find((g) => g.name === name);
      return svc.putGroups({
        ...(current ?? { name }),
        ...defined({ price_ratio: num(f.ratio), models: list(f.models), rps_limit: nullable(f.rps), inflight_limit: nullable(f.inflight) }),
      });
    }
    default:
      throw new UsageError(group ? `unknown command '${pos.slice(0, 2).join(' ')}'` : 'no command given');
  }
}

async function main(argv: string[]): Promise<number> {
  let parsed: { values: Flags; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true }) as { values: Flags; positionals: string[] };
  } catch (e) {
    process.stderr.write(`admin: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help || parsed.positionals.length === 0 || parsed.positionals[0] === 'help') {
    process.stdout.write(USAGE);
    return parsed.positionals.length === 0 && !parsed.values.help ? 2 : 0;
  }
  const messages = new MessagesUpstreamClient();
  const ds = createDataSource({ url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gmg', poolSize: 2, applicationName: 'gmg-admin' });
  try {
    await ds.initialize();
    const trial = { adapters: createUpstreamAdapters({ timeoutMs: 15_000 }), messages };
    const out = await run(new ManagementService(ds), new ChannelKeysService(ds, trial), (p) => loadPrices(ds, p), parsed.positionals, parsed.values);
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return 0;
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`admin: ${e.message}\n\n${USAGE}`);
      return 2;
    }
    process.stderr.write(`admin: ${isDomainError(e) ? e.message : e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  } finally {
    await messages.close();
    if (ds.isInitialized) await ds.destroy();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
