import { tokenCost, type TokenPrices, type TokenUsage } from '@gmg/contracts';
import type { ChatSettlement } from '@gmg/db';
import type { MessagesRequest } from '../chat/messages-request';
import type { RelayOutcome } from './messages-relay';
import type { SseUsageTracker } from './sse-usage.tracker';

/** Characters of relayed output counted as one token when the upstream never reported the output count. */
export const CHARS_PER_TOKEN = 4;

/**
 * What a running call has cost so far (journalled; a crash of the edge charges this): the input of message_start
 * and the output relayed so far, as for a stream cut short (a chat-completions stream, whose input comes only at its
 * end, with the input bound, as when it is cut). 0 before anything reached the client.
 */
export function liveCostOf(t: SseUsageTracker, req: MessagesRequest, prices: TokenPrices, ratio: number): bigint {
  if (t.usage.inputTokens === undefined && t.relayedOutputChars === 0) return 0n;
  return tokenCost(usageOf(t, req), prices, ratio);
}

function usageOf(t: SseUsageTracker, req: MessagesRequest): TokenUsage {
  const u = t.usage;
  return {
    // a non-streamed success without usage (never seen in practice): the input bound
    inputTokens: u.inputTokens ?? req.inputBound,
    cacheWriteTokens: u.cacheWriteTokens ?? 0,
    cacheReadTokens: u.cacheReadTokens ?? 0,
    outputTokens: t.finalUsage ? (u.outputTokens ?? 0) : Math.max(u.outputTokens ?? 0, Math.ceil(t.relayedOutputChars / CHARS_PER_TOKEN)),
  };
}

/**
 * The charge of a finished call (docs/messages.md, "What a call costs"):
 * - an answer that reached the client: the upstream's `usage` (non-streaming body; the final message_delta);
 * - a stream cut short (client gone, upstream died) after message_delta: that usage; before it: the input
 *   tokens of message_start plus the output relayed so far (characters / 4, at least the count reported);
 * - nothing produced for the client (an upstream error passed through, no channel, client gone first): 0.
 * The cost is clamped to the hold by the repository: never more than the most the request could cost.
 */
export function settlementOf(outcome: RelayOutcome, req: MessagesRequest, prices: TokenPrices, ratio: number): ChatSettlement {
  if (outcome.kind === 'failed') {
    return {
      status: 'failed',
      cost: 0n,
      result: { charge_rule: 'nothing_produced', reason: outcome.reason },
      error: { code: 'upstream_failed', message: outcome.reason },
      channelId: outcome.channelId,
    };
  }
  const t = outcome.tracker;
  const reported = t.finalUsage;
  const usage = usageOf(t, req);
  const cost = tokenCost(usage, prices, ratio);
  return {
    status: 'completed',
    cost,
    result: {
      usage: {
        input_tokens: usage.inputTokens,
        output_tokens: usage.outputTokens,
        cache_creation_input_tokens: usage.cacheWriteTokens,
        cache_read_input_tokens: usage.cacheReadTokens,
      },
      cost: cost.toString(),
      charge_rule: reported ? 'upstream_usage' : 'relayed_output',
      reason: outcome.reason,
    },
    error: null,
    channelId: outcome.channelId,
  };
}
