import type { RequestHandler, Response } from 'express';
import { callbackUrlProblem } from '@gmg/contracts';
import { DomainError } from '@gmg/errors';
import type { MediaHostCheck } from '../use-cases/media-host.check';

const LOCAL = 'callbackUrl';

/**
 * `callback_url` on any submission (docs/webhooks.md): taken out of the body before the model's contract sees it
 * (it is ours, never the upstream's), checked, and left for the submit use case in `res.locals`. A bad one is a 400
 * naming the field and the rule, before any money moves. Outside local mode its host is also resolved with the same
 * check as media URLs (`hostCheck`, docs/security.md): a public name that resolves to a private address is refused
 * here too; the delivery agent checks every connection again (docs/webhooks.md).
 */
export function callbackUrlMiddleware(opts: { allowInsecure: boolean; hostCheck?: MediaHostCheck }): RequestHandler {
  return async (req, res, next) => {
    const body = req.body as unknown;
    if (typeof body !== 'object' || body === null || Array.isArray(body) || !('callback_url' in body)) return next();
    const { callback_url: url, ...rest } = body as Record<string, unknown>;
    if (typeof url !== 'string') {
      throw new DomainError('invalid_request', '`callback_url` must be a string (an https URL)', { field: 'callback_url', rule: 'type' });
    }
    const problem = callbackUrlProblem(url, opts);
    if (problem) throw new DomainError('invalid_request', `\`callback_url\` ${problem}`, { field: 'callback_url', rule: 'url' });
    if (!opts.allowInsecure) await opts.hostCheck?.([{ field: 'callback_url', url }]);
    req.body = rest;
    res.locals[LOCAL] = url;
    next();
  };
}

/** The checked callback_url of this submission, if it had one. */
export const callbackUrlOf = (res: Response): string | undefined => res.locals[LOCAL] as string | undefined;
