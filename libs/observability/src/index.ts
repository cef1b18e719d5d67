export {
  collectProcessMetrics,
  recordSweep,
  recordTaskFinished,
  submits,
  upstreamRequests,
  upstreamDuration,
  settlements,
  batchErrors,
  largeBodies,
  largeBodiesWaiting,
  largeBodyBytesInFlight,
  pollLateness,
  resultStoreBytes,
  upstreamCallbacks,
  backlogDeferred,
} from './metrics';
export { batchFailed, type BatchLogger } from './batch-errors';
export { addHistograms, diffHistograms, emptyHistogram, histogramQuantile, parseHistogram, shareAtMost, sumSamples } from './histogram-text';
export type { HistogramBuckets } from './histogram-text';
export { httpMetricsMiddleware, metricsHandler, renderMetrics, routeOf } from './http-metrics';
export { reportChannelHealth, reportMoney, reportQueueDepth, trackBreaker } from './scrape-gauges';
export type { QueueCounts } from './scrape-gauges';
export { SpanKind, startTracing, traceCarrier, traceRequestsMiddleware, updateActiveSpan, withSpan } from './tracing';
