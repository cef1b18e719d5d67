import type { DataSource } from 'typeorm';
import { AccountRepository, ApiKeyRepository, ChannelRepository, GroupRepository } from '@gmg/db';
import { sumSamples } from '@gmg/observability';
import { waitFor } from '@gmg/testing';

/**
 * The vendor-callbacks arm of `npm run bench -- worker` (issue 35 item 8): two `fal` channels on the simulator, one
 * taking callbacks (the default) and one with `settings.callbacks: false`, each in its own group; the same number of
 * finishing tasks submitted to both at once through the edge (same load: the same worker also polls the main
 * window's `[sim:never]` tasks); the upstream polls each channel's tasks cost, from the worker's
 * `gmg_upstream_requests_total{operation="poll",channel}`, per completed task. A fal poll of a running task is one
 * GET of its status; a finished one adds the GET of its result.
 */
export const CALLBACK_SIGNING_KEY = 'bench-upstream-callback-key-0123456789abcdef';
const ARMS = { on: 'bench-cb-on', off: 'bench-cb-off' } as const;
type Arm = keyof typeof ARMS;

export interface CallbackArmResult {
  completed: number;
  failed: number;
  polls: number;
  pollsPerTask: number;
}

/** The two channels and a funded key per arm (before any service starts: the channels are read per submit). */
export async function prepareCallbackArms(ds: DataSource, simUrl: string): Promise<Record<Arm, string>> {
  const accounts = new AccountRepository(ds);
  const keys = {} as Record<Arm, string>;
  for (const arm of ['on', 'off'] as const) {
    const group = ARMS[arm];
    await new GroupRepository(ds).upsert({ name: group, priceRatio: 1, models: null, rpsLimit: null, inflightLimit: null });
    await new ChannelRepository(ds).create({
      name: group,
      protocol: 'fal',
      baseUrl: `${simUrl}/fal`,
      apiKey: `bench-vendor-key-${arm}`,
      groups: [group],
      settings: arm === 'off' ? { callbacks: false } : {},
    });
    const acc = await accounts.create({ name: group, groupName: group });
    await accounts.topup(acc.id, 10n ** 15n);
    keys[arm] = (await new ApiKeyRepository(ds).create({ accountId: acc.id, groupName: group })).secret;
  }
  return keys;
}

const pollsOf = (metrics: string, arm: Arm): number =>
  sumSamples(metrics, 'gmg_upstream_requests_total', [
    { name: 'operation', value: 'poll' },
    { name: 'channel', value: ARMS[arm] },
  ]) ?? 0;

/**
 * Submits `tasks` finishing `[sim:slow]` images (20–30 s at the simulator's real time) to each arm, interleaved,
 * waits until every one ended, and answers each arm's polls per completed task.
 */
export async function runCallbackArms(o: {
  ds: DataSource;
  edgeUrl: string;
  workerUrl: string;
  keys: Record<Arm, string>;
  tasks: number;
}): Promise<Record<Arm, CallbackArmResult>> {
  const metrics = async () => (await fetch(`${o.workerUrl}/metrics`)).text();
  const before = await metrics();
  const ids: Record<Arm, string[]> = { on: [], off: [] };
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next < 2 * o.tasks) {
        const i = next++;
        const arm: Arm = i % 2 === 0 ? 'on' : 'off';
        const r = await fetch(`${o.edgeUrl}/v1/images/generations`, {
          method: 'POST',
          headers: { authorization: `Bearer ${o.keys[arm]}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'lumen-2-flex', prompt: `bench callbacks ${i} [sim:slow]`, resolution: '1MP' }),
        });
        const j = (await r.json()) as { data?: Array<{ task_id: string }> };
        if (r.status !== 200 || !j.data?.[0]) throw new Error(`callback arm submit: ${r.status} ${JSON.stringify(j)}`);
        ids[arm].push(j.data[0].task_id);
      }
    }),
  );
  const ended = async (arm: Arm) =>
    (await o.ds.query(`SELECT status, count(*)::int AS n FROM tasks WHERE id = ANY($1) AND status IN ('completed', 'failed') GROUP BY status`, [
      ids[arm],
    ])) as Array<{ status: string; n: number }>;
  const total = async (arm: Arm) => (await ended(arm)).reduce((a, r) => a + r.n, 0);
  await waitFor(async () => ((await total('on')) === o.tasks && (await total('off')) === o.tasks ? true : undefined), {
    timeoutMs: 600_000,
    intervalMs: 500,
    what: 'every callback-arm task to end',
  });
  const after = await metrics();
  const result = {} as Record<Arm, CallbackArmResult>;
  for (const arm of ['on', 'off'] as const) {
    const rows = await ended(arm);
    const completed = rows.find((r) => r.status === 'completed')?.n ?? 0;
    const polls = pollsOf(after, arm) - pollsOf(before, arm);
    result[arm] = { completed, failed: o.tasks - completed, polls, pollsPerTask: completed ? polls / completed : NaN };
  }
  return result;
}
