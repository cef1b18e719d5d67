/**
 * Edge-side check of client media URLs (pure, no DNS). It refuses what can be recognized from the text alone:
 * non-http(s) schemes and literal addresses or names that point inside our network. Names are resolved at submit by
 * `PublicHostResolver` (libs/upstream, with `isPrivateAddress` below) and refused when any address is private;
 * what remains (DNS rebinding between our check and the upstream's fetch) is described in docs/security.md.
 */

export interface MediaUrlOptions {
  /** URLs starting with one of these are accepted as-is (the gateway's own upload links). */
  trustedPrefixes?: readonly string[];
}

const BLOCKED_NAMES = ['localhost', 'localhost.localdomain', 'ip6-localhost', 'ip6-loopback', 'metadata', 'metadata.google.internal'];
const BLOCKED_SUFFIXES = ['.localhost', '.internal', '.local', '.localdomain', '.home.arpa', '.intranet', '.lan', '.corp'];

/** [network, prefix length] of IPv4 ranges that are not public. */
const V4_BLOCKED: ReadonlyArray<[string, number]> = [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata 169.254.169.254
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

function v4ToInt(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return undefined;
    n = n * 256 + Number(p);
  }
  return n;
}

function v4Blocked(n: number): boolean {
  return V4_BLOCKED.some(([net, bits]) => {
    const size = 2 ** (32 - bits);
    return Math.floor(n / size) === Math.floor(v4ToInt(net)! / size);
  });
}

/** Eight 16-bit groups of an IPv6 literal (no brackets), or undefined. */
function parseV6(ip: string): number[] | undefined {
  let s = ip.toLowerCase().replace(/%.*$/, '');
  const lastColon = s.lastIndexOf(':');
  if (s.slice(lastColon + 1).includes('.')) {
    const v4 = v4ToInt(s.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    s = `${s.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const toGroups = (h: string) => (h === '' ? [] : h.split(':').map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)));
  const head = toGroups(halves[0]!);
  const rest = halves.length === 2 ? toGroups(halves[1]!) : [];
  if (head.some(Number.isNaN) || rest.some(Number.isNaN)) return undefined;
  const explicit = head.length + rest.length;
  if (halves.length === 1 ? explicit !== 8 : explicit > 7) return undefined;
  return [...head, ...new Array<number>(8 - explicit).fill(0), ...rest];
}

function v6Blocked(g: number[]): boolean {
  const embeddedV4 = (hi: number, lo: number) => v4Blocked(hi * 65536 + lo);
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 8)) return true; // ::
  if (zeros(0, 7) && g[7] === 1) return true; // ::1
  if (zeros(0, 5) && g[5] === 0xffff) return embeddedV4(g[6]!, g[7]!); // IPv4-mapped
  if (zeros(0, 6)) return embeddedV4(g[6]!, g[7]!); // IPv4-compatible (deprecated)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return embeddedV4(g[6]!, g[7]!); // NAT64
  if (g[0] === 0x2002) return embeddedV4(g[1]!, g[2]!); // 6to4
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local (incl. fd00::/8, fd00:ec2::254)
  if ((first & 0xffc0) === 0xfe80) return true; // link-local
  if ((first & 0xffc0) === 0xfec0) return true; // site-local (deprecated)
  if ((first & 0xff00) === 0xff00) return true; // multicast
  if (first === 0x2001 && g[1] === 0x0db8) return true; // documentation
  if (first === 0x0100 && zeros(1, 4)) return true; // discard-only
  return false;
}

/**
 * True when an IP address (IPv4 dotted quad, or IPv6 without brackets) is not a public unicast address: loopback,
 * private, link-local (cloud metadata), CGNAT, documentation, multicast, reserved, or an IPv6 form embedding one
 * (IPv4-mapped, NAT64, 6to4). Something that is not an IP literal counts as private: refuse what cannot be classified.
 */
export function isPrivateAddress(ip: string): boolean {
  const v4 = v4ToInt(ip);
  if (v4 !== undefined) return v4Blocked(v4);
  const g = parseV6(ip);
  return !g || v6Blocked(g);
}

/** Why a client media URL is refused, or undefined when it is acceptable. */
export function mediaUrlProblem(url: string, opts: MediaUrlOptions = {}): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'is not a valid absolute URL';
  }
  // Compare the NORMALIZED form: `…/v1/uploads/../../api/keys` and `%2e%2e` segments resolve before the check.
  if (opts.trustedPrefixes?.some((p) => p.length > 0 && u.href.startsWith(p))) return undefined;
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `must use http or https (got ${u.protocol.replace(/:$/, '')})`;
  if (u.username || u.password) return 'must not contain credentials';
  // WHATWG parsing already normalizes integer, octal and hex IPv4 forms (http://2130706433/ → 127.0.0.1)
  const host = u.hostname.toLowerCase().replace(/\.$/, '');
  if (host === '') return 'has no host';
  if (host.startsWith('[')) {
    const g = parseV6(host.slice(1, -1));
    if (!g || v6Blocked(g)) return 'points to a private, loopback or link-local address; use a public address';
    return undefined;
  }
  const v4 = v4ToInt(host);
  if (v4 !== undefined) return v4Blocked(v4) ? 'points to a private, loopback or link-local address; use a public address' : undefined;
  if (BLOCKED_NAMES.includes(host) || BLOCKED_SUFFIXES.some((s) => host.endsWith(s)) || !host.includes('.')) {
    return 'points to an internal host name; use a public address';
  }
  return undefined;
}

/** True for `data:<mime>;base64,...` URIs. */
export const isDataUri = (s: string): boolean => /^data:[\w.+-]+\/[\w.+-]+(;[\w=.+-]+)*;base64,/i.test(s);

/** True for bare Base64 (no data: prefix) of some plausible length. */
export const isBareBase64 = (s: string): boolean => s.length >= 16 && /^[A-Za-z0-9+/\r\n]+={0,2}$/.test(s);
