/**
 * Worker poll lateness across the fleet, as bench/worker.bench.ts measures it: each worker's own histogram
 * `gmg_poll_lateness_seconds` (claim time − due time of every steady poll its PollLoop claims from a shard's due set,
 * libs/tasks/src/poll-loop.ts), read from every worker process's /metrics (its HEALTH_PORT) at each snapshot and
 * summed over processes and pools. A row's lateness is the difference of two snapshots: every poll claimed in the
 * window counted, quantiles interpolated within a bucket as Prometheus does (the share within 1 s is exact, 1 s being
 * a bucket bound).
 *
 * A replaced worker (FLEET_FAULTS) starts its histogram again from 0: its predecessor's last reading is kept as an
 * offset, so the sum stays cumulative. Polls a killed process claimed after its last reading are lost with it; a
 * process that does not answer keeps its last reading (its polls since then count in the next window it answers).
 */
import { addHistograms, emptyHistogram, parseHistogram, type HistogramBuckets } from '@gmg/observability';
import { sumSamples } from '@gmg/observability';

const METRIC = 'gmg_poll_lateness_seconds';

interface Proc {
  /** The process's start (process_start_time_seconds): a new value is a new process. */
  started: number | undefined;
  last: HistogramBuckets;
  /** What the label's earlier processes had counted. */
  offset: HistogramBuckets;
}

export class WorkerLateness {
  private readonly procs = new Map<string, Proc>();

  /** One worker's /metrics text (`undefined`: it did not answer this time). */
  add(label: string, text: string | undefined): void {
    if (text === undefined) return;
    const reading = parseHistogram(text, METRIC);
    const started = sumSamples(text, 'process_start_time_seconds');
    const p = this.procs.get(label);
    if (!p) {
      this.procs.set(label, { started, last: reading, offset: emptyHistogram() });
      return;
    }
    const restarted = (started !== undefined && p.started !== undefined && started !== p.started) || reading.count < p.last.count;
    if (restarted) p.offset = addHistograms(p.offset, p.last);
    p.started = started;
    p.last = reading;
  }

  /** Every poll claimed so far, all worker processes (past and present) and pools together. */
  total(): HistogramBuckets {
    let sum = emptyHistogram();
    for (const p of this.procs.values()) sum = addHistograms(sum, addHistograms(p.offset, p.last));
    return sum;
  }
}
