import dgram from 'node:dgram';
import { isIPv4, isIPv6 } from 'node:net';

/**
 * A small authoritative DNS server on loopback UDP for tests (stands in for the internet's DNS): A and AAAA answers
 * from `records` (name → addresses of both families), NOERROR with no answer for a name without that family,
 * NXDOMAIN for unknown names, and no answer at all for names in `silent` (a DNS server that times out).
 */
export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for MEDIA_DNS_SERVERS / PublicHostResolver servers. */
  address: string;
  /** Questions received, as `name/TYPE`. */
  queries: string[];
  close(): Promise<void>;
}

const TYPE_A = 1;
const TYPE_AAAA = 28;

export async function startTestDnsServer(records: Record<string, string[]>, silent: string[] = []): Promise<TestDnsServer> {
  const socket = dgram.createSocket('udp4');
  const queries: string[] = [];
  socket.on('message', (msg, rinfo) => {
    const q = parseQuestion(msg);
    if (!q) return;
    queries.push(`${q.name}/${q.type === TYPE_A ? 'A' : q.type === TYPE_AAAA ? 'AAAA' : q.type}`);
    if (silent.includes(q.name)) return;
    const known = records[q.name];
    const addrs = (known ?? []).filter((a) => (q.type === TYPE_A ? isIPv4(a) : q.type === TYPE_AAAA ? isIPv6(a) : false));
    socket.send(answer(msg, q.end, known ? 0 : 3, q.type, addrs), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

function parseQuestion(msg: Buffer): { name: string; type: number; end: number } | undefined {
  if (msg.length < 17) return undefined;
  const labels: string[] = [];
  let i = 12;
  for (let n = 0; n < 128 && i < msg.length; n++) {
    const len = msg[i]!;
    if (len === 0) {
      i++;
      break;
    }
    labels.push(
      msg
        .subarray(i + 1, i + 1 + len)
        .toString('ascii')
        .toLowerCase(),
    );
    i += 1 + len;
  }
  if (i + 4 > msg.length) return undefined;
  return { name: labels.join('.'), type: msg.readUInt16BE(i), end: i + 4 };
}

/** The query's header and question, turned into a response with `rcode` and one record per address. */
function answer(query: Buffer, questionEnd: number, rcode: number, type: number, addrs: string[]): Buffer {
  const head = Buffer.from(query.subarray(0, questionEnd));
  head.writeUInt16BE(0x8180 | rcode, 2); // QR, RD, RA
  head.writeUInt16BE(1, 4); // QDCOUNT
  head.writeUInt16BE(addrs.length, 6); // ANCOUNT
  head.writeUInt32BE(0, 8); // NSCOUNT, ARCOUNT
  const rrs = addrs.map((a) => {
    const rdata = type === TYPE_A ? Buffer.from(a.split('.').map(Number)) : ipv6Bytes(a);
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0); // name: pointer to the question
    rr.writeUInt16BE(type, 2);
    rr.writeUInt16BE(1, 4); // IN
    rr.writeUInt32BE(60, 6); // TTL
    rr.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([rr, rdata]);
  });
  return Buffer.concat([head, ...rrs]);
}

function ipv6Bytes(a: string): Buffer {
  const [head, tail] = a.split('::');
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = groups(tail);
  const all = tail === undefined ? h : [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const buf = Buffer.alloc(16);
  all.forEach((g, i) => buf.writeUInt16BE(parseInt(g, 16), i * 2));
  return buf;
}
