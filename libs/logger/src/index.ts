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

/** Error fields that carry query parameters (channel keys, prompts, base64 images) or the raw driver error. */
const UNSAFE_ERROR_FIELDS = ['parameters', 'query', 'driverError', 'config', 'request', 'response'];

/**
 * pino's error serializer, minus the fields through which a database or HTTP client error would copy its inputs
 * (TypeORM's QueryFailedError keeps `parameters`; axios errors keep `config.headers`) into the log.
 */
export function serializeError(err: unknown): Record<string, unknown> {
  const out = pino.stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
  if (!out || typeof out !== 'object') return out;
  for (const k of UNSAFE_ERROR_FIELDS) delete out[k];
  return out;
}

export function createLogger(opts: LoggerOptions): Logger {
  return pino(
    {
      name: opts.service,
      level: opts.level ?? 'info',
      serializers: { err: serializeError, error: serializeError },
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
