import type { NormalizedRequest, TaskResult } from '@gmg/contracts';

/** What an adapter needs to reach one channel. The api key is a secret: never log it, never put it in job data. */
export interface ChannelTarget {
  id: string;
  name: string;
  protocol: string;
  baseUrl: string;
  apiKey: string;
}

export type UpstreamStatus = 'pending' | 'processing' | 'completed' | 'failed';

export interface UpstreamPoll {
  status: UpstreamStatus;
  /** Integer 0..100. */
  progress: number;
  result?: TaskResult;
  /** Set when status is `failed`. `moderation` marks a content-moderation refusal (final, no failover). */
  error?: { message: string; type?: string; moderation?: boolean };
  /**
   * The upstream's own view of the task when it says more than the unified status (the art suite's native shape:
   * status incl. MODAL, action, grid, URLs, description). Stored with the task as-is. Optional, additive.
   */
  native?: Record<string, unknown>;
}

export interface SubmitContext {
  /** Our task id; sent as the idempotency key so a resubmit after a crash does not create a second upstream task. */
  taskId: string;
}

/**
 * One upstream protocol. Failures are thrown as `UpstreamError` (@gmg/errors) with `retryable` set;
 * anything else thrown is a bug.
 */
export interface UpstreamAdapter {
  readonly protocol: string;
  submit(ch: ChannelTarget, req: NormalizedRequest, ctx: SubmitContext): Promise<{ upstreamTaskId: string }>;
  /**
   * `req` (optional, additive): what the task is (its pool), for protocols that poll different paths per kind of
   * task. Never the request body: a poll does not read it.
   */
  poll(ch: ChannelTarget, upstreamTaskId: string, req?: Pick<NormalizedRequest, 'pool'>): Promise<UpstreamPoll>;
  /**
   * Optional (protocols that can stop a task): tell the upstream the task was cancelled here. Best effort: the
   * task is already failed and refunded on our side whatever this answers; a 409 (already ended) is not an error.
   */
  cancel?(ch: ChannelTarget, upstreamTaskId: string, req?: Pick<NormalizedRequest, 'pool'>): Promise<void>;
}

export interface AdapterRegistry {
  /** The adapter of a protocol, or undefined when none is registered (a misconfigured channel). */
  getAdapter(protocol: string): UpstreamAdapter | undefined;
  protocols(): string[];
}

/** Adding a vendor protocol = one adapter file plus one entry in the list given here. */
export function createAdapterRegistry(adapters: readonly UpstreamAdapter[]): AdapterRegistry {
  const byProtocol = new Map<string, UpstreamAdapter>();
  for (const a of adapters) {
    if (byProtocol.has(a.protocol)) throw new Error(`two upstream adapters for protocol "${a.protocol}"`);
    byProtocol.set(a.protocol, a);
  }
  return {
    getAdapter: (protocol) => byProtocol.get(protocol),
    protocols: () => [...byProtocol.keys()],
  };
}
