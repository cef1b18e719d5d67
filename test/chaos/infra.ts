/**
 * The chaos suite's own Redis and Postgres: started on free ports in a temporary directory, so a FLUSHALL, a kill -9
 * or a restart never touches the servers other tests use (127.0.0.1:6379 and :5432 are never addressed here).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, chownSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import Redis, { type RedisOptions } from 'ioredis';
import { Client } from 'pg';
import { ownPort, redisAnswers, redisServerArgs, REPO_ROOT, ServerProc, serverUserWhenRoot, waitFor } from '@gmg/testing';
import { postgresAnswers } from '../../scripts/lib/db-setup';

export class ChaosRedis {
  private proc: ServerProc | undefined;
  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  static async start(root: string): Promise<ChaosRedis> {
    const port = await ownPort();
    const r = new ChaosRedis(port, path.join(root, 'redis'));
    mkdirSync(r.dir, { recursive: true });
    await r.launch();
    return r;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** No persistence: a restart comes back empty, as a failover to an empty replica does. */
  async launch(): Promise<void> {
    const child = spawn('redis-server', redisServerArgs(this.port, ['--dir', this.dir, '--logfile', '']), { stdio: 'ignore' });
    this.proc = new ServerProc(child);
    await waitFor(async () => (await this.ping()) || undefined, { timeoutMs: 10_000, intervalMs: 50, what: `redis-server on ${this.port}` });
  }

  ping(): Promise<boolean> {
    return redisAnswers(this.port);
  }

  client(opts: RedisOptions = {}): Redis {
    return new Redis(this.port, '127.0.0.1', { maxRetriesPerRequest: 1, ...opts });
  }

  async flushAll(): Promise<void> {
    const c = this.client();
    try {
      await c.flushall();
    } finally {
      c.disconnect();
    }
  }

  async kill9(): Promise<void> {
    await this.proc?.signal('SIGKILL');
  }

  async stop(): Promise<void> {
    await this.proc?.signal('SIGTERM', 10_000);
  }
}

/** initdb/postgres from /usr/lib/postgresql/<newest>/bin; as root the server runs as the `postgres` user. */
export class ChaosPostgres {
  private proc: ServerProc | undefined;
  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly bin: string,
    private readonly ids: { uid: number; gid: number } | undefined,
  ) {}

  static async start(root: string): Promise<ChaosPostgres> {
    const base = '/usr/lib/postgresql';
    const versions = existsSync(base) ? readdirSync(base).filter((v) => existsSync(path.join(base, v, 'bin/initdb'))) : [];
    if (!versions.length) throw new Error('no initdb under /usr/lib/postgresql/*/bin');
    const bin = path.join(base, versions.sort((a, b) => Number(b) - Number(a))[0]!, 'bin');
    const ids = serverUserWhenRoot();
    const port = await ownPort();
    const pg = new ChaosPostgres(port, path.join(root, 'pg'), bin, ids);
    mkdirSync(pg.dir, { recursive: true });
    if (ids) {
      chownSync(root, ids.uid, ids.gid);
      chownSync(pg.dir, ids.uid, ids.gid);
    }
    execFileSync(path.join(bin, 'initdb'), ['-D', pg.dir, '-U', 'postgres', '-A', 'trust', '--no-sync'], { stdio: 'ignore', ...ids });
    await pg.launch();
    return pg;
  }

  adminUrl(db = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${db}`;
  }

  async launch(): Promise<void> {
    this.proc = new ServerProc(
      spawn(
        path.join(this.bin, 'postgres'),
        ['-D', this.dir, '-p', String(this.port), '-k', this.dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=200'],
        { stdio: 'ignore', ...this.ids },
      ),
    );
    await waitFor(async () => (await this.answers()) || undefined, { timeoutMs: 30_000, intervalMs: 100, what: `postgres on ${this.port}` });
  }

  answers(): Promise<boolean> {
    return postgresAnswers(this.adminUrl(), 1000);
  }

  async createDatabase(name: string): Promise<string> {
    const c = new Client({ connectionString: this.adminUrl() });
    await c.connect();
    try {
      await c.query(`CREATE DATABASE "${name}"`);
    } finally {
      await c.end();
    }
    return this.adminUrl(name);
  }

  /**
   * A crash of Postgres itself: every server process killed -9 (its backends first, then the postmaster), so what
   * sat in its shared memory — the WAL buffers the WAL writer had not written yet — is gone, as after an OOM kill
   * of the pod. `launch()` afterwards runs crash recovery from the WAL on disk.
   */
  async crash(): Promise<void> {
    const pid = this.proc?.pid;
    if (pid === undefined || !this.proc?.alive) return;
    try {
      execFileSync('pkill', ['-KILL', '-P', String(pid)], { stdio: 'ignore' });
    } catch {
      // no child left to kill
    }
    await this.proc.signal('SIGKILL');
  }

  /** A fast shutdown (SIGINT: open sessions are cut, as a failover or a restart does). */
  async stop(): Promise<void> {
    await this.proc?.signal('SIGINT', 30_000);
  }
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * PgBouncer in transaction mode in front of the suite's Postgres (k8s/base/pgbouncer/pgbouncer.ini with what differs
 * here: loopback, a free port, trust auth, small pools), as production runs it. `restart` is a kill and a start on
 * the same port: every client connection and every server session is cut, as a pooler pod's restart does.
 */
export class ChaosPgBouncer {
  private proc: ServerProc | undefined;
  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly ids: { uid: number; gid: number } | undefined,
  ) {}

  static available(): boolean {
    try {
      execFileSync('pgbouncer', ['--version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  }

  static async start(root: string, pg: ChaosPostgres): Promise<ChaosPgBouncer> {
    const port = await ownPort();
    const dir = path.join(root, 'pgbouncer');
    mkdirSync(dir, { recursive: true });
    const ini = readFileSync(path.join(REPO_ROOT, 'k8s/base/pgbouncer/pgbouncer.ini'), 'utf8')
      .replace(/^%include .*databases\.ini$/m, `%include ${dir}/databases.ini`)
      .replace(/^listen_addr = .*$/m, 'listen_addr = 127.0.0.1')
      .replace(/^listen_port = .*$/m, `listen_port = ${port}`)
      .replace(/^auth_type = .*$/m, 'auth_type = trust')
      .replace(/^auth_file = .*$/m, `auth_file = ${dir}/userlist.txt`)
      .replace(/^admin_users = .*$/m, 'admin_users = postgres')
      .replace(/^stats_users = .*$/m, 'stats_users = postgres')
      .replace(/^default_pool_size = .*$/m, 'default_pool_size = 20')
      .replace(/^max_db_connections = .*$/m, 'max_db_connections = 60');
    writeFileSync(path.join(dir, 'pgbouncer.ini'), `${ini}\nlogfile = ${dir}/pgbouncer.log\npidfile = ${dir}/pgbouncer.pid\n`);
    const dbs = readFileSync(path.join(REPO_ROOT, 'k8s/base/pgbouncer/databases.ini.example'), 'utf8').replace(
      'host=postgres port=5432',
      `host=127.0.0.1 port=${pg.port}`,
    );
    writeFileSync(path.join(dir, 'databases.ini'), dbs);
    writeFileSync(path.join(dir, 'userlist.txt'), '"postgres" ""\n');
    const ids = serverUserWhenRoot();
    if (ids) for (const f of ['', 'pgbouncer.ini', 'databases.ini', 'userlist.txt']) chownSync(path.join(dir, f), ids.uid, ids.gid);
    const b = new ChaosPgBouncer(port, dir, ids);
    await b.launch();
    return b;
  }

  url(db: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${db}`;
  }

  async launch(): Promise<void> {
    this.proc = new ServerProc(spawn('pgbouncer', [path.join(this.dir, 'pgbouncer.ini')], { stdio: 'ignore', ...this.ids }));
    await waitFor(async () => (await this.answers()) || undefined, { timeoutMs: 15_000, intervalMs: 50, what: `pgbouncer on ${this.port}` });
  }

  answers(): Promise<boolean> {
    return postgresAnswers(this.url('pgbouncer'), 1000, 'SHOW VERSION');
  }

  async kill9(): Promise<void> {
    await this.proc?.signal('SIGKILL');
  }

  async stop(): Promise<void> {
    await this.proc?.signal('SIGTERM', 10_000);
  }
}

/**
 * A TCP proxy in front of one of the suite's servers, for faults the network makes rather than the server: every
 * chunk held `delayMs` in each direction (a slow Postgres: latency injected, the server itself fine), or dropped
 * while `blackholed` (packets lost, the connections left open: nothing is refused, nothing answers). Order is kept
 * per direction (one queue and one timer each), whatever the delay does meanwhile.
 */
export class ChaosTcpProxy {
  delayMs = 0;
  blackholed = false;
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<ChaosTcpProxy> {
    const port = await ownPort();
    const server = net.createServer();
    const self = new ChaosTcpProxy(server, port);
    server.on('connection', (client: net.Socket) => self.connect(client, targetPort));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    return self;
  }

  private connect(client: net.Socket, targetPort: number): void {
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.setNoDelay(true);
      s.on('close', () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
      s.on('error', () => undefined);
    }
    this.pipe(client, upstream);
    this.pipe(upstream, client);
  }

  private pipe(from: net.Socket, to: net.Socket): void {
    const queue: Array<{ due: number; chunk: Buffer }> = [];
    let timer: NodeJS.Timeout | undefined;
    const drain = (): void => {
      timer = undefined;
      const now = Date.now();
      while (queue.length && queue[0]!.due <= now) to.write(queue.shift()!.chunk);
      if (queue.length) timer = setTimeout(drain, queue[0]!.due - now);
    };
    from.on('data', (chunk: Buffer) => {
      if (this.blackholed) return;
      if (this.delayMs <= 0 && queue.length === 0) {
        to.write(chunk);
        return;
      }
      const last = queue.length ? queue[queue.length - 1]!.due : 0;
      queue.push({ due: Math.max(Date.now() + this.delayMs, last), chunk });
      timer ??= setTimeout(drain, Math.max(0, queue[0]!.due - Date.now()));
    });
    from.on('close', () => {
      if (timer) clearTimeout(timer);
    });
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
