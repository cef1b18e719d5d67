import type { NormalizedRequest } from '@gmg/contracts';
import type { UpstreamMedia, UpstreamPoll } from '../../adapter';
import { isModerationFailure, truncate } from '../../upstream-failure';
import { type Json, isObj } from '../../json-value';

/**
 * A prediction's status words (https://replicate.com/docs/topics/predictions/lifecycle): `aborted` is a deadline
 * that passed before the prediction started (never billed).
 */
type PredictionStatus = 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled' | 'aborted';
const STATUSES: readonly string[] = ['starting', 'processing', 'succeeded', 'failed', 'canceled', 'aborted'] satisfies PredictionStatus[];

/**
 * Replicate's own safety-filter words: "The input or output was flagged as sensitive. Please try again with different
 * inputs. (E005)" and the models' NSFW refusals (the common moderation words are matched too).
 */
const REPLICATE_MODERATION = /flagged as sensitive|\bnsfw\b|\(E005\)/i;

/** The last percentage a model's progress bar printed in `logs` (cog models log tqdm bars: ` 45%|████▌ | 14/30`). */
function logsProgress(logs: unknown): number | undefined {
  if (typeof logs !== 'string') return undefined;
  const all = [...logs.slice(-4000).matchAll(/(\d{1,3})%/g)];
  const last = all.length ? Number(all[all.length - 1]![1]) : NaN;
  return Number.isFinite(last) ? Math.max(1, Math.min(99, last)) : undefined;
}

/** `output` of a file model: one URL string or a list of them (each model page's output schema says which). */
function outputUrls(output: unknown): string[] {
  const items = Array.isArray(output) ? output : [output];
  return items.filter((u): u is string => typeof u === 'string' && /^https?:\/\//i.test(u));
}

function errorText(error: unknown): string {
  if (typeof error === 'string' && error) return error;
  if (isObj(error) && typeof error.message === 'string' && error.message) return error.message;
  return error === undefined || error === null ? 'Generation failed' : JSON.stringify(error);
}

const failed = (message: string, extra: { type?: string; moderation?: boolean } = {}): UpstreamPoll => ({
  status: 'failed',
  progress: 0,
  error: { message: truncate(message, 1000), ...extra },
});

/**
 * The prediction at `GET /v1/predictions/{id}` as our poll. Output links on replicate.delivery die after an hour
 * (https://replicate.com/docs/topics/predictions/output-files), so a finished prediction's files always come back as
 * `media`: the gateway keeps them and serves its own links.
 */
export function mapPrediction(p: Json, req?: Pick<NormalizedRequest, 'pool'>): UpstreamPoll {
  const raw = typeof p.status === 'string' ? p.status : '';
  // an unknown word is "still running": the step machine's deadline bounds it (new-api #5045: never a failure)
  const status = (STATUSES.includes(raw) ? raw : 'processing') as PredictionStatus;
  switch (status) {
    case 'starting':
      return { status: 'pending', progress: 0 };
    case 'processing':
      return { status: 'processing', progress: logsProgress(p.logs) ?? 50 };
    case 'succeeded': {
      const urls = outputUrls(p.output);
      if (urls.length === 0) {
        return failed(p.data_removed === true ? 'the prediction output was removed before it was kept' : 'the prediction succeeded without an output file');
      }
      const kind = req?.pool === 'video' || (req?.pool !== 'image' && /\.(mp4|webm|mov)(\?|$)/i.test(urls[0]!)) ? 'video' : 'image';
      const media: UpstreamMedia[] = urls.map((url) => ({ kind, source: { url } }));
      return { status: 'completed', progress: 100, media };
    }
    case 'failed': {
      const message = errorText(p.error);
      return failed(message, { moderation: REPLICATE_MODERATION.test(message) || isModerationFailure(undefined, message) });
    }
    case 'canceled':
      return failed('the prediction was canceled upstream', { type: 'cancelled' });
    case 'aborted':
      return failed('the prediction was aborted upstream before it started');
    default: {
      const never: never = status;
      return { status: 'processing', progress: 50, native: { status: never } };
    }
  }
}
