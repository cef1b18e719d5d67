import Joi from 'joi';
import { env } from './env';

/**
 * Vendor callbacks (issue 35 item 8; docs/upstreams.md, "Vendor callbacks"): the workers give each submit to a
 * vendor that takes a callback a per-task URL on the edge, signed with UPSTREAM_CALLBACK_SIGNING_KEY; the edge
 * verifies it with the same key. A secret: no default, never logged.
 */
export interface UpstreamCallbackEnv {
  UPSTREAM_CALLBACK_SIGNING_KEY?: string;
}

/** The workers' side: callbacks are on when UPSTREAM_CALLBACK_BASE_URL is set (the key is then required). */
export interface UpstreamCallbackWorkerEnv extends UpstreamCallbackEnv {
  UPSTREAM_CALLBACK_BASE_URL?: string;
  UPSTREAM_CALLBACK_POLL_FACTOR: number;
}

const signingKey = env.secret(32).empty('');

/** The edge: unset, the callback route is not mounted (404). */
export const upstreamCallbackSchema = { UPSTREAM_CALLBACK_SIGNING_KEY: signingKey };

export const upstreamCallbackWorkerSchema = {
  // The edge's public base as vendors reach it (often PUBLIC_BASE_URL); unset: no callbacks, polls only.
  UPSTREAM_CALLBACK_BASE_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .empty(''),
  UPSTREAM_CALLBACK_SIGNING_KEY: signingKey.when('UPSTREAM_CALLBACK_BASE_URL', { is: Joi.exist(), then: Joi.required() }),
  // A task whose vendor will call back polls this many times less often (the safety net for a lost callback).
  UPSTREAM_CALLBACK_POLL_FACTOR: Joi.number().min(1).max(100).default(6),
};
