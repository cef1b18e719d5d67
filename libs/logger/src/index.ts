import pino, { type Logger } from 'pino';

export type { Logger };

/** Paths never written to a log: keys, tokens, upstream secrets. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.authorization',
  '*.Authorization',
  '*.api_key',
  '*.apiKey',
  '*.key',
  '*.secret',
  '*.password',
  '*.token',
  'api_key',
  'apiKey',
  'password',
  'token',
];

export interface LoggerOptions {
  service: string;
  level?: string;
  /** For tests: a destination stream. */
  destination?: pino.DestinationStream;
}

export function createLogger(opts: LoggerOptions): Logger {
  return pino(
    {
      name: opts.service,
      level: opts.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { service: opts.service, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    opts.destination,
  );
}

/** Masks a URL's credentials and query (may carry tokens) for logging. */
export function safeUrl(u: string): string {
  try {
    const url = new URL(u);
    url.username = '';
    url.password = '';
    const hasQuery = url.search !== '';
    url.search = '';
    url.hash = '';
    return url.toString() + (hasQuery ? '?…' : '');
  } catch {
    return '[invalid-url]';
  }
}
