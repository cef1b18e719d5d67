import type { ExpectedOutput, TaskResult } from '@gmg/contracts';
import type { ChannelTarget, UpstreamMedia } from '../adapter';

/**
 * Keeps a finished task's files in the result store (results kept by us, issue 34) and answers the task's result
 * with the gateway's own signed links in their place.
 * - Streams each file through (never a whole video in memory), bounded in bytes and time, its type checked
 *   (images: jpeg/png/webp; videos: mp4/webm/quicktime) against what the task expects.
 * - Idempotent: the same task and index always land on the same key, so a retried step overwrites, never adds.
 * - A link on the channel's own host is fetched as the channel is trusted (loopback allowed); any other host must
 *   resolve to public addresses only.
 * Throws `UpstreamError`: retryable for a failed download or store write (the step machine retries the poll),
 * final for a file that is not what the task asked for (wrong type, over the size cap).
 */
export interface MediaKeeper {
  keep(input: KeepInput): Promise<TaskResult>;
}

export interface KeepInput {
  taskId: string;
  channel: ChannelTarget;
  media: readonly UpstreamMedia[];
  /** Fields of the result the adapter already made (e.g. `text`); `images`/`videos` are replaced by ours. */
  result?: TaskResult;
  expected: ExpectedOutput;
}
