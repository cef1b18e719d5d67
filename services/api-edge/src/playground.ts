import path from 'node:path';
import express, { type Express } from 'express';

/** The playground's static files (plain ES modules, no build step, no CDN): services/api-edge/public/playground. */
const PLAYGROUND_DIR = path.resolve(__dirname, '..', 'public', 'playground');

/**
 * `GET /playground`: one page where a person pastes a key, picks a model, fills a form generated from its JSON
 * Schema, submits and watches the task (docs/sdk.md#playground). No auth here — the page holds no secret; the key
 * is typed in and kept in the page's memory only (spec 5.5), sent on each call as `Authorization: Bearer`.
 * Strict CSP: scripts, styles and calls only from this origin; results (images, videos) from any http(s) origin,
 * since result links point at storage or the upstream.
 */
export function mountPlayground(app: Express): void {
  app.use(
    '/playground',
    (_req, res, next) => {
      res.setHeader(
        'Content-Security-Policy',
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' http: https: data: blob:; media-src 'self' http: https: blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      );
      res.setHeader('Referrer-Policy', 'no-referrer');
      res.setHeader('X-Content-Type-Options', 'nosniff');
      next();
    },
    express.static(PLAYGROUND_DIR, { index: 'index.html', redirect: true, maxAge: 0 }),
  );
}
