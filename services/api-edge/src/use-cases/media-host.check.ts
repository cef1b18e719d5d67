import type { MediaUrlRef } from '@gmg/contracts';
import { DomainError } from '@gmg/errors';
import type { Logger } from '@gmg/logger';
import type { HostVerdict } from '@gmg/upstream';

/** Refuses a request whose media URL hosts resolve to a non-public address (throws), before any money moves. */
export type MediaHostCheck = (urls: readonly MediaUrlRef[]) => Promise<void>;

export const MEDIA_RESOLVE_RULE = 'server:media-url-resolve';

/**
 * Issue 11.6 / docs/security.md: every http(s) media URL of a submission (not the gateway's own upload links) is
 * resolved, and the request is refused with 400 naming the field when ANY address of its host is loopback,
 * private, link-local or metadata, or when its host does not resolve in time (nothing is known about it: the
 * safe answer is no; a warning shows operators a resolver outage). Hosts are checked concurrently.
 */
export function createMediaHostCheck(resolver: { checkUrl(url: string): Promise<HostVerdict> }, logger: Pick<Logger, 'warn'>): MediaHostCheck {
  return async (urls) => {
    if (urls.length === 0) return;
    const verdicts = await Promise.all(urls.map(async (u) => ({ u, v: await resolver.checkUrl(u.url) })));
    for (const { u, v } of verdicts) {
      if (v.kind === 'private') {
        throw new DomainError(
          'invalid_request',
          `\`${u.field}\` names a host that resolves to a private, loopback or link-local address; use a publicly reachable host`,
          { field: u.field, rule: MEDIA_RESOLVE_RULE },
        );
      }
      if (v.kind === 'unresolved') {
        logger.warn({ field: u.field, host: new URL(u.url).hostname, reason: v.reason }, 'media URL host could not be resolved; request refused');
        throw new DomainError(
          'invalid_request',
          `\`${u.field}\` names a host that could not be resolved in time (${v.reason}); use a host with working DNS, or upload the image (POST /v1/uploads/images)`,
          { field: u.field, rule: MEDIA_RESOLVE_RULE },
        );
      }
    }
  };
}
