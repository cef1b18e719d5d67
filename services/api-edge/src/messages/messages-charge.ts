import { tokenCost, type TokenPrices, type TokenUsage } from '@gmg/contracts';
import type { ChatSettlement } from '@gmg/db';
import type { MessagesRequest } from './messages-request';
import type { RelayOutcome } from './messages-relay';

/** Characters of relayed output counted as one token when the upstream never reported the output count. */
export const CHARS_PER_TOKEN = 4;

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
  const u = t.usage;
  const usage: TokenUsage = {
    // a non-streamed success without usage (never seen in practice): the input bound
    inputTokens: u.inputTokens ?? req.inputBound,
    cacheWriteTokens: u.cacheWriteTokens ?? 0,
    cacheReadTokens: u.cacheReadTokens ?? 0,
    outputTokens: reported ? (u.outputTokens ?? 0) : Math.max(u.outputTokens ?? 0, Math.ceil(t.relayedOutputChars / CHARS_PER_TOKEN)),
  };
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
