import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { LRUCache } from 'lru-cache';
import { isPrivateAddress } from '@gmg/contracts';

export interface PublicHostResolverOptions {
  /** DNS servers (`ip`, `ip:port`, `[ipv6]:port`); empty or absent: the system's (resolv.conf). */
  servers?: readonly string[];
  /** A host that does not answer within this is `unresolved`. */
  timeoutMs: number;
  /** How long a definitive verdict (public, private, no such name) is cached; 0 = no cache. */
  cacheTtlMs: number;
  maxEntries?: number;
}

/**
 * - `public`: every address the name has is public (or it has none: a name that does not exist reaches nothing).
 * - `private`: at least one address is loopback, private, link-local, metadata... (`addresses` lists them).
 * - `unresolved`: DNS did not answer in time or failed; nothing is known, so the caller must not accept the URL.
 */
export type HostVerdict = { kind: 'public' } | { kind: 'private'; addresses: string[] } | { kind: 'unresolved'; reason: string };

/** Answers that mean "no such record": the name is definitively absent in this family. */
const ABSENT = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

/**
 * Resolves the host of a media URL and says whether it is safe to hand to an upstream: refused when ANY of its A or
 * AAAA addresses is not public (wildcard DNS like `127.0.0.1.<domain>` included). Literal addresses are classified
 * without DNS. Each lookup is bounded by `timeoutMs` (one try per server), verdicts are cached per host, and one
 * lookup per host is in flight at a time. The answer is only as good as the moment it was taken: see
 * docs/security.md (DNS rebinding) for what remains.
 */
export class PublicHostResolver {
  private readonly cache: LRUCache<string, HostVerdict> | undefined;
  private readonly inflight = new Map<string, Promise<HostVerdict>>();

  constructor(private readonly opts: PublicHostResolverOptions) {
    this.cache = opts.cacheTtlMs > 0 ? new LRUCache({ max: opts.maxEntries ?? 10_000, ttl: opts.cacheTtlMs }) : undefined;
  }

  /** The verdict for the host of an http(s) URL. */
  async checkUrl(url: string): Promise<HostVerdict> {
    return this.checkHost(new URL(url).hostname);
  }

  async checkHost(hostname: string): Promise<HostVerdict> {
    const host = hostname
      .toLowerCase()
      .replace(/^\[|\]$/g, '')
      .replace(/\.$/, '');
    if (isIP(host)) return isPrivateAddress(host) ? { kind: 'private', addresses: [host] } : { kind: 'public' };
    const cached = this.cache?.get(host);
    if (cached) return cached;
    const pending = this.inflight.get(host);
    if (pending) return pending;
    const p = this.lookup(host)
      .then((v) => {
        if (v.kind !== 'unresolved') this.cache?.set(host, v);
        return v;
      })
      .finally(() => this.inflight.delete(host));
    this.inflight.set(host, p);
    return p;
  }

  private async lookup(host: string): Promise<HostVerdict> {
    // A resolver per lookup: cancel() at the deadline must not cancel other hosts' queries.
    const resolver = new Resolver({ timeout: Math.max(1, this.opts.timeoutMs), tries: 1 });
    if (this.opts.servers && this.opts.servers.length > 0) resolver.setServers([...this.opts.servers]);
    let timer: NodeJS.Timeout | undefined;
    // The resolver's own timeout is per query; this bounds the whole lookup (both families, every server).
    const deadline = new Promise<HostVerdict>((resolve) => {
      timer = setTimeout(() => resolve({ kind: 'unresolved', reason: `no DNS answer within ${this.opts.timeoutMs} ms` }), this.opts.timeoutMs);
    });
    try {
      return await Promise.race([resolveBoth(resolver, host), deadline]);
    } finally {
      clearTimeout(timer);
      resolver.cancel();
    }
  }
}

async function resolveBoth(resolver: Resolver, host: string): Promise<HostVerdict> {
  const answers = await Promise.all([family(resolver.resolve4(host)), family(resolver.resolve6(host))]);
  const bad = answers.flatMap((a) => ('addresses' in a ? a.addresses : [])).filter(isPrivateAddress);
  if (bad.length > 0) return { kind: 'private', addresses: bad };
  const failed = answers.find((a): a is { error: string } => 'error' in a);
  return failed ? { kind: 'unresolved', reason: failed.error } : { kind: 'public' };
}

/** One family's answer: its addresses (none when the name has no such record), or why DNS failed. */
async function family(p: Promise<string[]>): Promise<{ addresses: string[] } | { error: string }> {
  try {
    return { addresses: await p };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
    return ABSENT.has(code) ? { addresses: [] } : { error: `DNS ${code}` };
  }
}
