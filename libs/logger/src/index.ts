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
  /**
   * Standard output buffered for at most this many milliseconds (`LOG_FLUSH_MS`, default 100): lines leave in one
   * write per LOG_BUFFER_BYTES or per interval instead of one synchronous write each. 0: every line written at once,
   * synchronously (pino's default). Ignored with `destination`.
   */
  flushMs?: number;
}

/** The buffer that sends lines out before the interval does. */
const LOG_BUFFER_BYTES = 4096;
/** Beyond this many bytes waiting (stdout blocked), lines are dropped rather than held in memory. */
const LOG_MAX_PENDING_BYTES = 16 * 1024 * 1024;

/**
 * Standard output as pino writes it: synchronously line by line (`flushMs` 0), or buffered — one write per
 * LOG_BUFFER_BYTES or every `flushMs`, off the event loop. pino flushes a buffered destination at process exit
 * (a crash included); only a killed process (SIGKILL, OOM) loses at most `flushMs` of lines.
 */
function stdoutDestination(flushMs: number): pino.DestinationStream | undefined {
  if (flushMs <= 0) return undefined;
  const dest = pino.destination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES, maxLength: LOG_MAX_PENDING_BYTES });
  const timer = setInterval(() => {
    try {
      dest.flush();
    } catch {
      clearInterval(timer); // destroyed (exit): nothing more to flush
    }
  }, flushMs);
  timer.unref();
  return dest;
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
    opts.destination ?? stdoutDestination(opts.flushMs ?? 0),
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
