import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, propagation, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import type { RequestHandler } from 'express';

export { SpanKind };

/** W3C trace context as it travels in job data (`traceparent`, optional `tracestate`). */
export type TraceCarrier = Record<string, string>;

export interface TracingOptions {
  service: string;
  /** OTEL_EXPORTER_OTLP_ENDPOINT (base URL; spans go to `<endpoint>/v1/traces` as OTLP/HTTP JSON). Unset: off. */
  endpoint?: string;
  /** Largest delay before a batch of spans is sent. Default 2 s. */
  flushIntervalMs?: number;
}

export interface Tracing {
  readonly enabled: boolean;
  /** Sends what is buffered and stops; call at shutdown. */
  shutdown(): Promise<void>;
}

const TRACER = 'gmg';
const tracer = () => trace.getTracer(TRACER);

/**
 * Turns tracing on for this process when an endpoint is given. Off (the default), the OpenTelemetry API stays
 * the no-op it is out of the box: spans are non-recording, nothing is allocated per request beyond that, no
 * context is injected into job data and nothing is exported — and the SDK (tracing-sdk.ts: the provider, the
 * exporter, ~17 MiB resident) is never loaded.
 */
export function startTracing(opts: TracingOptions): Tracing {
  if (!opts.endpoint) return { enabled: false, shutdown: async () => undefined };
  // eslint-disable-next-line @typescript-eslint/no-require-imports, @typescript-eslint/no-unsafe-assignment -- loaded only when tracing is on (a static import would load the SDK into every process); typed by the annotation, destructured so knip sees the export used
  const { startTracerProvider }: typeof import('./tracing-sdk') = require('./tracing-sdk');
  const stop = startTracerProvider({ ...opts, endpoint: opts.endpoint });
  return {
    enabled: true,
    async shutdown() {
      await stop();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/** The active span's context as a carrier for job data; undefined when tracing is off or no span is active. */
export function traceCarrier(): TraceCarrier | undefined {
  const carrier: TraceCarrier = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? carrier : undefined;
}

/** The active trace id, or undefined when tracing is off. */
export function currentTraceId(): string | undefined {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && trace.isSpanContextValid(sc) ? sc.traceId : undefined;
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** Continue the trace carried by a job; default: the active context. */
  parent?: TraceCarrier;
}

/**
 * Runs `fn` inside a new span (a child of `parent` or of the active span), ending it when `fn` settles; a throw
 * marks the span as an error and is rethrown. With tracing off this is a plain call.
 */
export async function withSpan<T>(name: string, opts: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const parentCtx: Context = opts.parent ? propagation.extract(ROOT_CONTEXT, opts.parent) : context.active();
  return tracer().startActiveSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, parentCtx, async (span) => {
    try {
      return await fn(span);
    } catch (e) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
      throw e;
    } finally {
      span.end();
    }
  });
}

/**
 * The edge's server span per request (continuing a client's `traceparent`), named `METHOD route` when it ends.
 * The request and response emitters are bound to its context, so listeners added later (the JSON body parser) and
 * everything after them run inside it. Sets `X-Trace-Id` on the response. A no-op when tracing is off.
 */
export function traceRequestsMiddleware(
  routeOf: (req: Parameters<RequestHandler>[0]) => string,
  ignore: (path: string) => boolean = () => false,
): RequestHandler {
  return (req, res, next) => {
    if (!propagation.fields().includes('traceparent') || ignore(req.path)) return next();
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer().startSpan(`${req.method}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } }, parent);
    const ctx = trace.setSpan(parent, span);
    res.setHeader('X-Trace-Id', span.spanContext().traceId);
    res.once('finish', () => {
      const route = routeOf(req);
      span.updateName(`${req.method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': res.statusCode });
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.bind(ctx, req);
    context.bind(ctx, res);
    context.with(ctx, next);
  };
}

/** Renames the active span and adds attributes, once what it does is known (a task step: submit or poll). */
export function updateActiveSpan(name: string, attributes: Attributes = {}): void {
  trace.getActiveSpan()?.updateName(name).setAttributes(attributes);
}
