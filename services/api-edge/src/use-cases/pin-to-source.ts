import type { NormalizedRequest } from '@gmg/contracts';
import type { TaskRecord } from '@gmg/db';
import { DomainError } from '@gmg/errors';

/**
 * A request that continues an upstream task (pixel-v6 `extend_from_task_id`, an art-suite follow-up's `task_id`)
 * must reach the channel that ran the source, under the source's upstream id: our task id means nothing there.
 * Returns the request with `field` of the upstream body rewritten and the channel pinned; the caller has already
 * checked that the source is the caller's own finished task.
 */
export function pinToSourceTask(request: NormalizedRequest, field: string, source: TaskRecord): NormalizedRequest {
  if (!source.upstreamTaskId || !source.channelId) {
    // A finished task always has both; a row without them was never submitted upstream.
    throw new DomainError('invalid_request', `\`${field}\`: task '${source.id}' has no upstream result to continue`, {
      field,
      rule: 'server:source-state',
    });
  }
  return {
    ...request,
    upstreamBody: { ...request.upstreamBody, [field]: source.upstreamTaskId },
    pinnedChannelId: source.channelId,
  };
}
