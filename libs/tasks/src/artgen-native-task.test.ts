import type { TaskRecord } from '@gmg/db';
import { artgenJobHash, artgenParentFacts, toArtgenNativeTask } from './artgen-native-task';
import { toUnifiedTask } from '@gmg/db';

const at = new Date('2025-11-22T00:00:00Z');
const row = (over: Partial<TaskRecord> = {}): TaskRecord => ({
  id: 'task_a1',
  accountId: 'acc',
  apiKeyId: 'key',
  model: 'artgen',
  requestedModel: 'artgen',
  pool: 'artgen',
  status: 'pending',
  progress: 0,
  request: {
    model: 'artgen',
    requestedModel: 'artgen',
    pool: 'artgen',
    upstreamBody: { prompt: 'a fox --ar 3:2' },
    derived: { action: 'imagine', version: 'v7' },
    expected: { kind: 'images', count: 4 },
  },
  price: 40_000n,
  priceSnapshot: {},
  channelId: null,
  upstreamTaskId: null,
  result: null,
  error: null,
  createdAt: at,
  startedAt: null,
  completedAt: null,
  deadlineAt: at,
  updatedAt: at,
  native: null,
  ...over,
});

describe('the native art task from a task row', () => {
  it('maps the unified states to the native ones, MODAL from the upstream state', () => {
    expect(toArtgenNativeTask(row()).status).toBe('SUBMITTED');
    expect(toArtgenNativeTask(row({ status: 'processing', progress: 46 }))).toMatchObject({ status: 'IN_PROGRESS', progress: '46%', buttons: [] });
    expect(toArtgenNativeTask(row({ status: 'processing', native: { status: 'MODAL' } })).status).toBe('MODAL');
    expect(toArtgenNativeTask(row({ status: 'failed', error: { code: 'task_failed', message: 'Task timeout' } }))).toMatchObject({
      status: 'FAILURE',
      fail_reason: 'Task timeout',
    });
  });

  it('shows the grid, the tiles and our own buttons on success', () => {
    const images = [1, 2, 3, 4].map((i) => ({ url: `http://up/${i}.png` }));
    const v = toArtgenNativeTask(
      row({
        status: 'completed',
        progress: 100,
        completedAt: at,
        result: { images },
        native: { status: 'SUCCESS', grid_image_url: 'http://up/g.png', width: 768, height: 512 },
      }),
    );
    expect(v).toMatchObject({
      action: 'IMAGINE',
      status: 'SUCCESS',
      progress: '100%',
      prompt: 'a fox --ar 3:2',
      grid_image_url: 'http://up/g.png',
      width: 768,
      height: 512,
    });
    expect(v.image_urls).toEqual(images.map((i) => i.url));
    expect(v.buttons[0]).toEqual({ label: 'U1', customId: `MJ::JOB::upsample::1::${artgenJobHash('task_a1')}` });
  });

  it('offers pan arrows only on a pan-capable single image', () => {
    const single = (version: string) =>
      row({ status: 'completed', result: { images: [{ url: 'http://up/u.png' }] }, request: { ...row().request, derived: { action: 'upscale', version } } });
    expect(toArtgenNativeTask(single('v7')).buttons.map((b) => b.label)).toContain('⬅️');
    expect(toArtgenNativeTask(single('v5.2')).buttons.map((b) => b.label)).not.toContain('⬅️');
  });

  it('answers describe with its text in prompt and description', () => {
    const v = toArtgenNativeTask(
      row({
        status: 'completed',
        request: { ...row().request, upstreamBody: {}, derived: { action: 'describe' } },
        result: { text: '1️⃣ a cat' },
        native: { status: 'SUCCESS', description: '1️⃣ a cat' },
      }),
    );
    expect(v).toMatchObject({ action: 'DESCRIBE', prompt: '1️⃣ a cat', description: '1️⃣ a cat', buttons: [] });
  });

  it('hashes differ per task, and parent facts come from the row', () => {
    expect(artgenJobHash('task_a1')).toMatch(/^[0-9a-f]{32}$/);
    expect(artgenJobHash('task_a1')).not.toBe(artgenJobHash('task_a2'));
    expect(artgenParentFacts(row({ status: 'processing', native: { status: 'MODAL' } }))).toEqual({
      action: 'imagine',
      version: 'v7',
      status: 'processing',
      nativeStatus: 'MODAL',
      imageCount: 0,
    });
    expect(artgenParentFacts(row({ model: 'lumen-2-pro' })).action).toBeUndefined();
  });
});

describe('the unified view of an art task', () => {
  it('shows the estimated time of its action', () => {
    expect(toUnifiedTask(row()).estimated_time).toBe(60);
    expect(toUnifiedTask(row({ request: { ...row().request, derived: { action: 'describe' } } })).estimated_time).toBe(3);
  });
});
