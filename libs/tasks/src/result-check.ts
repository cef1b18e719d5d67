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
