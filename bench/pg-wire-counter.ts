import net from 'node:net';
import { cpuSeconds } from './proc-stats';

/**
 * A loopback TCP relay between one process and Postgres that counts what the process asks of Postgres, from the
 * frontend messages of the wire protocol (postgresql.org/docs/current/protocol-message-formats.html): statements
 * (`Q` simple queries + `E` executes of the extended protocol) and round trips (`Q` + `S` syncs: each waits for its
 * ReadyForQuery). pg_stat_statements needs a server restart to load; this needs nothing of the server, and it counts
 * one edge's statements only, even when another edge or another bench uses the same server meanwhile.
 *
 * It also knows the server backends serving its connections (by the port each connection leaves from, which the
 * server shows as `client_port`), so it can read their CPU alone: Postgres's CPU for this process's statements,
 * without the other databases' backends of a shared machine (the WAL writer and checkpointer excluded: shared).
 */
export interface PgWireCounter {
  /** The URL to give the process instead of `url`. */
  url: string;
  counts(): { statements: number; roundTrips: number; byStatement: Map<string, number> };
  /** CPU seconds of the backends serving this relay's connections (open ones; a closed one's CPU is kept). */
  backendCpuSeconds(): Promise<number>;
  close(): Promise<void>;
}

export async function pgWireCounter(url: string, pidOfPort: (ports: number[]) => Promise<Map<number, number>>): Promise<PgWireCounter> {
  const target = new URL(url);
  let statements = 0;
  let roundTrips = 0;
  /** Statements by their text's start and end (whitespace collapsed): which ones a call makes. */
  const byStatement = new Map<string, number>();
  const countText = (sql: string) => {
    const t = sql.replace(/\s+/g, ' ').trim();
    const key = t.length <= 100 ? t : `${t.slice(0, 60)} … ${t.slice(-36)}`;
    byStatement.set(key, (byStatement.get(key) ?? 0) + 1);
  };
  const sockets = new Set<net.Socket>();
  /** Local ports of the relay's connections to Postgres (the backends' client_port). */
  const ports = new Set<number>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    upstream.once('connect', () => upstream.localPort && ports.add(upstream.localPort));
    let buf: Buffer = Buffer.alloc(0);
    let started = false;
    /** The text of the last Parse: what the next Execute runs (unnamed statements: node-postgres parses each query). */
    let parsed = '';
    client.on('data', (d: Buffer) => {
      upstream.write(d);
      buf = buf.length ? Buffer.concat([buf, d]) : d;
      // the startup message (and an SSLRequest) has no type byte: length, then contents
      for (;;) {
        if (!started) {
          if (buf.length < 8) break;
          const len = buf.readInt32BE(0);
          if (buf.length < len) break;
          // SSLRequest / GSSENCRequest: another untyped message follows
          const code = buf.readInt32BE(4);
          if (code !== 80877103 && code !== 80877104) started = true;
          buf = buf.subarray(len);
          continue;
        }
        if (buf.length < 5) break;
        const len = buf.readInt32BE(1);
        if (buf.length < len + 1) break;
        const type = String.fromCharCode(buf[0]);
        // Parse: name\0 query\0 …; Query: query\0
        const text = (at: number) => buf.toString('utf8', at, buf.indexOf(0, at));
        if (type === 'Q') {
          statements++;
          roundTrips++;
          countText(text(5));
        } else if (type === 'P') parsed = text(buf.indexOf(0, 5) + 1);
        else if (type === 'E') {
          statements++;
          countText(parsed);
        } else if (type === 'S') roundTrips++;
        buf = buf.subarray(len + 1);
      }
    });
    upstream.on('data', (d) => client.write(d));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const relayed = new URL(url);
  relayed.hostname = '127.0.0.1';
  relayed.port = String((server.address() as net.AddressInfo).port);
  /** pid → last CPU seconds read: a backend that ended keeps what it had used. */
  const cpu = new Map<number, number>();
  return {
    url: relayed.toString(),
    counts: () => ({ statements, roundTrips, byStatement: new Map(byStatement) }),
    async backendCpuSeconds() {
      for (const pid of (await pidOfPort([...ports])).values()) {
        try {
          cpu.set(pid, cpuSeconds(pid));
        } catch {
          // ended meanwhile
        }
      }
      return [...cpu.values()].reduce((a, b) => a + b, 0);
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
