import path from 'node:path';
import express, { Router } from 'express';
import { DomainError } from '@gmg/errors';
import { methodNotAllowed } from '../http/error-handler';

/** The console app's build (packages/console, `npm run build`), in a checkout and in the image alike. */
export const DEFAULT_CONSOLE_DIR = path.resolve(__dirname, '..', '..', '..', '..', 'packages', 'console', 'dist');

/** Where a build puts its content-hashed files: cached for a year, never revalidated. */
const HASHED_DIR = 'assets';

export interface ConsoleMountOptions {
  /** The built app (CONSOLE_DIR); default DEFAULT_CONSOLE_DIR. */
  dir?: string;
  /**
   * The origins result files come from beyond this one (PUBLIC_BASE_URL's, CONSOLE_MEDIA_SOURCES): CSP source
   * expressions added to `img-src` and `media-src`.
   */
  mediaSources?: readonly string[];
}

/** The console's Content-Security-Policy: scripts, styles, fonts and calls from this origin only; media also from `mediaSources`. */
export function consoleCsp(mediaSources: readonly string[] = []): string {
  const media = [...new Set(mediaSources)].join(' ');
  const extra = media ? ` ${media}` : '';
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data: blob:${extra}`,
    `media-src 'self' blob:${extra}`,
    "connect-src 'self'",
    "font-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const notBuilt = (): DomainError => new DomainError('service_unavailable', 'the console is not built: run npm run build');

/**
 * `/console`: the operators' and customers' web app (docs/management-api.md, "Console routes"), static files from
 * its build. Nothing is read at start-up: each request stats and streams its file (the edge's memory budget).
 * Hashed files under `assets/` are immutable for a year; `index.html` is revalidated on every load; a path under
 * /console without a file extension that names no file is a deep link of the app and answers `index.html`; a missing
 * build answers 503 in words. Every answer, errors included, carries the strict CSP, `nosniff` and `no-referrer`.
 */
export function createConsoleRouter(opts: ConsoleMountOptions = {}): Router {
  const dir = path.resolve(opts.dir ?? DEFAULT_CONSOLE_DIR);
  const csp = consoleCsp(opts.mediaSources);
  const router = Router();
  router.use((_req, res, next) => {
    res.setHeader('Content-Security-Policy', csp);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    next();
  });
  router.use(
    express.static(dir, {
      index: false,
      redirect: false,
      dotfiles: 'ignore',
      etag: true,
      lastModified: true,
      setHeaders: (res, file) => {
        const hashed = path.relative(dir, file).split(path.sep)[0] === HASHED_DIR;
        res.setHeader('Cache-Control', hashed ? 'public, max-age=31536000, immutable' : 'no-cache');
      },
    }),
  );
  router.get(/.*/, (req, res, next) => {
    // a file the build does not have (a stale hashed name): 404, not the page as the wrong type
    if (path.posix.extname(req.path) !== '') return next();
    res.sendFile(
      path.join(dir, 'index.html'),
      { headers: { 'Cache-Control': 'no-cache' }, dotfiles: 'deny' },
      (err?: NodeJS.ErrnoException & { status?: number }) => {
        if (!err) return;
        if (res.headersSent) return next(err);
        next(err.status === 404 || err.code === 'ENOENT' || err.code === 'ENOTDIR' ? notBuilt() : err);
      },
    );
  });
  const refuse = methodNotAllowed(['GET']);
  router.all(/.*/, (req, res, next) => (req.method === 'GET' || req.method === 'HEAD' ? next() : refuse(req, res, next)));
  return router;
}
