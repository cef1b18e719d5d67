import type { ChannelRepository, TaskRecord } from '@gmg/db';
import { keyedTarget, taskKey, type AdapterRegistry } from '@gmg/upstream';

/** Tells the channel holding a cancelled task to stop it, when the channel's protocol can (adapter.cancel). */
export class UpstreamCanceller {
  constructor(
    private readonly channels: Pick<ChannelRepository, 'getWithSecret'>,
    private readonly adapters: AdapterRegistry,
  ) {}

  async cancel(task: TaskRecord): Promise<void> {
    if (!task.channelId || !task.upstreamTaskId) return;
    const ch = await this.channels.getWithSecret(task.channelId);
    const adapter = ch ? this.adapters.getAdapter(ch.protocol) : undefined;
    if (!ch || !adapter?.cancel) return;
    // with the key that submitted it (another of the channel's once that one is set aside)
    await adapter.cancel(keyedTarget(ch, taskKey(ch.keys ?? [], task.channelKeyId)), task.upstreamTaskId, task.request);
  }
}
