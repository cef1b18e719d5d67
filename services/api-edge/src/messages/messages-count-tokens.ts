import type { Response } from 'express';
import type { MessagesChannel } from '@gmg/db';
import type { Logger } from '@gmg/logger';
import { pickChannel, type MessagesUpstreamClient } from '@gmg/upstream';
import type { RelayInput } from './messages-relay';
import type { MessagesRequest } from '../chat/messages-request';
import { IMAGE_TOKEN_CEILING, PROMPT_OVERHEAD_TOKENS } from '../chat/messages-request';

export interface CountTokensInput {
  res: Response;
  request: MessagesRequest;
  channels: readonly MessagesChannel[];
  gate: RelayInput['gate'];
  version: string;
  body: Buffer;
  headers: Record<string, string>;
  maxAnswerBytes: number;
}

/** Bytes per token of the estimate: the usual average of text in the tokenizers we know. */
const BYTES_PER_TOKEN = 4;

/**
 * POST /v1/messages/count_tokens: relayed to the first channel that counts (the upstream's own tokenizer is the
 * truth; counting is free, nothing is charged). When no channel supports it (404/405) or none answers, the
 * gateway answers an estimate and says so: `estimate: true` in the body and `gmg-token-count: estimate` (text at
 * 4 bytes per token, images and documents at their bounds: an estimate on the high side).
 */
export async function countTokens(client: MessagesUpstreamClient, logger: Logger, c: CountTokensInput): Promise<void> {
  const tried = new Set<string>();
  const signal = AbortSignal.timeout(30_000);
  for (let ch = pickChannel(c.channels, c.gate); ch; ch = pickChannel(c.channels, c.gate, { exclude: tried })) {
    tried.add(ch.id);
    try {
      const a = await client.send({
        target: ch,
        path: '/v1/messages/count_tokens',
        version: c.version,
        body: c.body,
        headers: c.headers,
        stream: false,
        signal,
      });
      const text = await a.body.text();
      if (text.length > c.maxAnswerBytes) continue;
      if (a.status === 200 || (a.status >= 400 && a.status < 500 && ![401, 402, 403, 404, 405, 408, 429].includes(a.status))) {
        // a count, or the caller's own mistake (400: the body is wrong), as the upstream said it
        c.res.status(a.status).type('application/json').setHeader('gmg-token-count', 'upstream');
        c.res.end(text);
        return;
      }
      logger.info({ channel: ch.name, status: a.status }, 'count_tokens not answered by this channel');
    } catch (err) {
      logger.warn({ channel: ch.name, err: (err as Error).message }, 'count_tokens upstream unreachable');
    }
  }
  const r = c.request;
  c.res.setHeader('gmg-token-count', 'estimate');
  c.res.json({
    input_tokens:
      Math.ceil(r.textBytes / BYTES_PER_TOKEN) +
      r.images * IMAGE_TOKEN_CEILING +
      (r.inputBound - r.textBytes - r.images * IMAGE_TOKEN_CEILING - PROMPT_OVERHEAD_TOKENS),
    estimate: true,
  });
}
