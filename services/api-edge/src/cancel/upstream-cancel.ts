import type { ChannelRepository, TaskRecord } from '@gmg/db';
import { channelTarget, type AdapterRegistry } from '@gmg/upstream';

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
    await adapter.cancel(channelTarget(ch), task.upstreamTaskId, task.request);
  }
}
