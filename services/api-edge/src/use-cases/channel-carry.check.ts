import type { NormalizedRequest } from '@gmg/contracts';
import type { ChannelRecord } from '@gmg/db';
import { violationError } from '@gmg/errors';
import { channelTarget, type AdapterRegistry, type Unsupported } from '@gmg/upstream';

/** Refuses (400 naming the field) a request that no channel of its model and group can carry, before money moves. */
export type ChannelCarryCheck = (request: NormalizedRequest, group: string) => Promise<void>;

/**
 * Each channel's protocol declares what it can carry (libs/upstream translation tables). A request passes when one
 * eligible channel can carry it (the worker then submits only to such channels). With no eligible channel at all
 * the request is accepted as before and ends as `No available upstream`, refunded: that is an operator's gap, not
 * the client's mistake. A request pinned to a channel (a continuation) is checked against that channel only.
 */
export function channelCarryCheck(channels: { get(model: string, group: string): Promise<ChannelRecord[]> }, adapters: AdapterRegistry): ChannelCarryCheck {
  return async (request, group) => {
    // a continuation (pinned to the channel that ran its source) is carried by that channel or not at all
    const pinned = request.pinnedChannelId;
    const list = (await channels.get(request.model, group)).filter((c) => !pinned || c.id === pinned);
    if (list.length === 0) return;
    let first: Unsupported | undefined;
    for (const c of list) {
      const adapter = adapters.getAdapter(c.protocol);
      if (!adapter) continue;
      const problem = adapter.check?.(channelTarget({ ...c, apiKey: '' }), request);
      if (!problem) return;
      first ??= problem;
    }
    if (first) throw violationError({ status: 400, type: 'invalid_request_error', field: first.field, rule: 'upstream:unsupported', message: first.message });
  };
}
