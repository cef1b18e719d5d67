import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * The OpenTelemetry SDK behind the API: a provider exporting OTLP/HTTP batches to `<endpoint>/v1/traces`, the
 * async-hooks context manager and the W3C propagator, set as the globals. Loaded by startTracing only when tracing
 * is on. Returns the provider's shutdown (flushes what is buffered).
 */
export function startTracerProvider(opts: { service: string; endpoint: string; flushIntervalMs?: number }): () => Promise<void> {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': opts.service }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${opts.endpoint.replace(/\/+$/, '')}/v1/traces` }), {
        scheduledDelayMillis: opts.flushIntervalMs ?? 2000,
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return () => provider.shutdown();
}
