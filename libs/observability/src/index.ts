export {
  collectProcessMetrics, recordSweep, recordTaskFinished, submits, upstreamRequests, upstreamDuration, settlements,
  largeBodies, largeBodiesWaiting, largeBodyBytesInFlight, pollLateness,
} from './metrics';
export { httpMetricsMiddleware, metricsHandler, renderMetrics, routeOf } from './http-metrics';
export { reportMoney, reportQueueDepth, trackBreaker } from './scrape-gauges';
export type { QueueCounts } from './scrape-gauges';
export { SpanKind, startTracing, traceCarrier, traceRequestsMiddleware, updateActiveSpan, withSpan } from './tracing';
