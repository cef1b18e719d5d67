import type { WebhookWorkerOptions } from './webhooks/webhook-worker';

/**
 * The webhook worker as the billing tests run it: receivers on loopback (allowed: local mode), a backoff made short
 * by config (20 ms, doubling) instead of by sleeping, 5 attempts, an hour's maximum age.
 */
export const LOOPBACK_WEBHOOKS: WebhookWorkerOptions = {
  concurrency: 4,
  allowInsecure: true,
  timeoutMs: 3000,
  maxResponseBytes: 1024,
  attempts: 5,
  backoffMs: 20,
  maxAgeMs: 3600_000,
};
