import type { Request, RequestHandler, Response } from 'express';
import { resolveModel } from '@gmg/contracts';
import { submits } from '@gmg/observability';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Where the error handler leaves the error type of a failed request (the `outcome` label of a refused submit). */
export const ERROR_TYPE_LOCAL = 'errorType';

/**
 * Counts each submission once it is answered: `gmg_submits_total{model, outcome}`. The model is the canonical id of
 * a catalog model named by the body (else `artgen` on the art suite's paths, else `other`): bounded, never the raw string a
 * client sent. Outcome: `accepted`, `payment_required` (402), `rate_limited` (429), else the error type.
 */
export const submitMetricsMiddleware: RequestHandler = (req, res, next) => {
  res.once('finish', () => submits.inc({ model: modelOf(req), outcome: outcomeOf(res) }));
  next();
};

function modelOf(req: Request): string {
  const named: unknown = isObject(req.body) ? req.body.model : undefined;
  const known = typeof named === 'string' ? resolveModel(named)?.id : undefined;
  return known ?? (req.originalUrl.startsWith('/v1/artgen') ? 'artgen' : 'other');
}

function outcomeOf(res: Response): string {
  const status = res.statusCode;
  if (status < 400) return 'accepted';
  if (status === 402) return 'payment_required';
  if (status === 429) return 'rate_limited';
  const type: unknown = res.locals[ERROR_TYPE_LOCAL];
  return typeof type === 'string' ? type : `http_${status}`;
}

/** The request id and trace id a task is stored with (support lookups: GET /api/tasks?request_id=…). */
export function originOf(req: Request, res: Response): { requestId: string; traceId?: string } {
  const traceId = res.getHeader('X-Trace-Id');
  return { requestId: String(req.id), ...(typeof traceId === 'string' ? { traceId } : {}) };
}
