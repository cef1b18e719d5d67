/**
 * Lateness of worker polls, as bench/worker.bench.ts measures it: for a sample of in-flight tasks, the job's due time
 * while it waits in its queue's delayed set (score = ms × 0x1000 + a counter) and the next `processedOn` (set when a
 * worker takes it); lateness = processedOn − due. Read every 200 ms with single-key commands (each routed to its own
 * slot on a cluster, so no pipeline crosses slots).
 */
import type { Cluster, Redis } from 'ioredis';
import { taskJobId } from '@gmg/contracts';
import type { SubmittedTask } from './driver';

type Pool = 'image' | 'video' | 'artgen' | 'avatar';

/** Where a task's job lives: its queue's delayed set and the job's hash (BullMQ's own key names). */
export type JobKeys = (pool: Pool, jobId: string) => { delayed: string; job: string };

export class LatenessSampler {
  private readonly due = new Map<string, number>();
  private readonly processed = new Map<string, number>();
  private samples: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private busy = false;

  constructor(private readonly redis: Redis | Cluster, private readonly keys: JobKeys, private readonly inFlight: () => SubmittedTask[], private readonly sampleSize = 40) {}

  start(): void {
    this.timer = setInterval(() => { void this.tick(); }, 200);
  }

  /** The samples since the last call. */
  take(): number[] {
    const s = this.samples;
    this.samples = [];
    return s;
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const tasks = this.inFlight().slice(0, this.sampleSize);
      await Promise.all(tasks.map((t) => this.read(t)));
    } catch {
      // a Redis node failing over: this tick has no samples
    } finally {
      this.busy = false;
    }
  }

  private async read(t: SubmittedTask): Promise<void> {
    if (t.kind === 'messages') return;
    const jobId = taskJobId(t.id);
    const k = this.keys(t.kind, jobId);
    const [score, processed] = await Promise.all([this.redis.zscore(k.delayed, jobId), this.redis.hget(k.job, 'processedOn')]);
    const processedOn = Number(processed ?? 0);
    const prev = this.processed.get(t.id);
    if (prev !== undefined && processedOn > prev) {
      const d = this.due.get(t.id);
      if (d !== undefined && processedOn >= d - 1) this.samples.push(processedOn - d);
      this.due.delete(t.id);
    }
    this.processed.set(t.id, processedOn);
    if (score !== null) this.due.set(t.id, Math.floor(Number(score) / 0x1000));
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
