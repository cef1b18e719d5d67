import express from 'express';
import type { DataSource } from 'typeorm';
import { ApiKeyRepository } from '@gmg/db';
import { createLogger } from '@gmg/logger';
import { createManagementRouter, type ManagementRouterDeps } from './management.router';

/**
 * The management API alone under `/api`, on a test database: `adminToken` is its admin credential and the database's
 * own keys authenticate (the `/self` routes); `extra` adds or overrides router deps (a trial, onKeyRevoked, a logger).
 */
export function managementApp(ds: DataSource, adminToken: string, extra: Partial<ManagementRouterDeps> = {}): express.Express {
  const keys = new ApiKeyRepository(ds);
  const app = express();
  app.use(
    '/api',
    createManagementRouter({
      ds,
      adminToken,
      authenticate: (s) => keys.authenticate(s),
      logger: createLogger({ service: 'test', level: 'silent' }),
      ...extra,
    }),
  );
  return app;
}
