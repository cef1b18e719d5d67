import { readdirSync, readFileSync } from 'node:fs';

/** What the benchmarks read from /proc of the processes they measure (proc(5)); Linux only. */

const CLOCK_TICKS = 100; // USER_HZ

/** User + system CPU seconds of one process (fields 14 and 15 of /proc/<pid>/stat: utime, stime). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** A /proc/<pid>/status memory field of one process (VmRSS now, VmHWM its peak), in MiB. */
export function memMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
}

/** The pid and its children (a service started through a launcher runs in a child of it). */
function pidsOf(pid: number): number[] {
  try {
    return [pid, ...readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)];
  } catch {
    return [pid];
  }
}

/** The largest value of a memory field among a process and its children, in MiB; NaN without a pid. */
export function treeMemMiB(pid: number | undefined, field: 'VmRSS' | 'VmHWM'): number {
  if (!pid) return NaN;
  return Math.max(
    ...pidsOf(pid).map((p) => {
      try {
        return memMiB(p, field) || 0;
      } catch {
        return 0;
      }
    }),
  );
}

/** The p-th percentile of ascending `sorted`. */
export const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

/**
 * User + system CPU seconds of every `postgres` process of this machine (the server and all its backends, the
 * walwriter included): read before and after a phase, the difference is what Postgres spent on it — on a machine
 * where nothing else uses Postgres meanwhile (a bench's own quiet run).
 */
export function postgresCpuSeconds(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
    } catch {
      // the process ended while we read
    }
  }
  return total;
}
