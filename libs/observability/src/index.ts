export {
  collectProcessMetrics, recordSweep, recordTaskFinished, submits, upstreamRequests, upstreamDuration, settlements,
} from './metrics';
export { httpMetricsMiddleware, metricsHandler, renderMetrics, routeOf } from './http-metrics';
export { reportMoney, reportQueueDepth, trackBreaker } from './scrape-gauges';
export type { MoneySnapshot, QueueCounts } from './scrape-gauges';
export { SpanKind, currentTraceId, startTracing, traceCarrier, traceRequestsMiddleware, updateActiveSpan, withSpan } from './tracing';
export type { TraceCarrier, Tracing } from './tracing';
