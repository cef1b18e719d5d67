import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

/**
 * Secrets of the local quick start, kept in .data/demo.json (mode 0600, git-ignored) so that the same demo key and
 * admin token come back on the next `npm start`. An env value always wins and is not written to the file.
 */
export interface LocalSecrets {
  demoApiKey: string;
  adminToken: string;
  simApiKey: string;
  /** RESULT_SIGNING_KEY of the edge and the workers: signs the links of kept results. */
  resultSigningKey: string;
}

const base62 = (n: number): string => {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let out = '';
  while (out.length < n) for (const b of randomBytes(n)) if (b < 248 && out.length < n) out += alphabet[b % 62];
  return out;
};

/** Same shape as the gateway's own keys (`sk-` + 40 base62), so the demo key looks like any other. */
export const generateApiKey = (): string => `sk-${base62(40)}`;
export const generateToken = (): string => randomBytes(24).toString('base64url');

export function loadOrCreateSecrets(file: string, env: NodeJS.ProcessEnv): LocalSecrets {
  let saved: Partial<LocalSecrets> = {};
  if (existsSync(file)) {
    try {
      saved = JSON.parse(readFileSync(file, 'utf8')) as Partial<LocalSecrets>;
    } catch {
      throw new Error(`${file} is not valid JSON; delete it to generate new local secrets`);
    }
  }
  const next: LocalSecrets = {
    demoApiKey: saved.demoApiKey ?? generateApiKey(),
    adminToken: saved.adminToken ?? generateToken(),
    simApiKey: saved.simApiKey ?? generateToken(),
    resultSigningKey: saved.resultSigningKey ?? generateToken(),
  };
  if (
    next.demoApiKey !== saved.demoApiKey ||
    next.adminToken !== saved.adminToken ||
    next.simApiKey !== saved.simApiKey ||
    next.resultSigningKey !== saved.resultSigningKey
  ) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
  }
  return {
    demoApiKey: env.DEMO_API_KEY || next.demoApiKey,
    adminToken: env.ADMIN_TOKEN || next.adminToken,
    simApiKey: env.SIM_API_KEY || next.simApiKey,
    resultSigningKey: env.RESULT_SIGNING_KEY || next.resultSigningKey,
  };
}
