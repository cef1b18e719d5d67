import type { ExpectedOutput, TaskResult } from '@gmg/contracts';

const nonEmpty = (a: unknown[] | undefined): boolean => Array.isArray(a) && a.length > 0;

/**
 * Whether an upstream's "completed" carries what the request asked for. A completed task is charged, so a
 * completion without its output is treated as a failure (and refunded) instead.
 */
export function hasExpectedResult(expected: ExpectedOutput | undefined, result: TaskResult | undefined): boolean {
  if (!result) return false;
  switch (expected?.kind) {
    case 'images':
      return nonEmpty(result.images) && result.images!.every((i) => typeof i.url === 'string' && i.url !== '');
    case 'videos':
      return nonEmpty(result.videos) && result.videos!.every((v) => Array.isArray(v.url) && typeof v.url[0] === 'string');
    case 'assets':
      return nonEmpty(result.assets);
    case 'text':
      return typeof result.text === 'string' && result.text !== '';
    default:
      return nonEmpty(result.images) || nonEmpty(result.videos) || nonEmpty(result.assets) || Boolean(result.text);
  }
}

/**
 * What a completed task is charged when its result delivers less than was billed: `price × delivered / billed`
 * (rounded down, in the client's favour), or undefined when it delivered everything (the whole hold is captured).
 * Images: fewer images than `expected.count`. Videos: a first video whose reported `duration` is shorter than the
 * billed `expected.durationSeconds`, counted in started seconds (billing is per second, and encoders round the
 * last frame). A result without a duration is taken as complete. Every price line of an image or video contract
 * scales with the count or the seconds, so the share applies to the whole price.
 */
export function deliveredCapture(price: bigint, expected: ExpectedOutput | undefined, result: TaskResult): bigint | undefined {
  const share = deliveredShare(expected, result);
  if (!share || share.delivered >= share.billed) return undefined;
  return (price * BigInt(share.delivered)) / BigInt(share.billed);
}

function deliveredShare(expected: ExpectedOutput | undefined, result: TaskResult): { delivered: number; billed: number } | undefined {
  if (expected?.kind === 'images' && expected.count > 1) {
    return { delivered: result.images?.length ?? 0, billed: expected.count };
  }
  if (expected?.kind === 'videos' && expected.durationSeconds && expected.durationSeconds > 0) {
    const d = result.videos?.[0]?.duration;
    if (typeof d !== 'number' || !Number.isFinite(d) || d <= 0) return undefined;
    return { delivered: Math.ceil(d - 0.05), billed: Math.ceil(expected.durationSeconds) };
  }
  return undefined;
}
