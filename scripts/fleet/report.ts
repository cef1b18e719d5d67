/** The run's tables: one row per window and a total, the processes' CPU and memory, and the faults. */
import { diffHistograms, histogramQuantile, shareAtMost } from '@gmg/observability';
import { pct } from '../../bench/proc-stats';
import { Window } from './driver';
import { redisCommandsBetween, type Snapshot } from './sampler';

export interface Row {
  label: string;
  seconds: number;
  targetRps: number;
  submitsPerS: number;
  refused: number;
  completedPerS: number;
  failed: number;
  submitP50: number;
  submitP99: number;
  pollsPerS: number;
  pollP50: number;
  pollP99: number;
  messagesPerS: number;
  /** Worker poll lateness (claim − due) over the window, ms: every steady poll the workers claimed (./lateness.ts). */
  lateP50: number;
  lateP99: number;
  /** Share of those polls claimed within 1 s of due (0–1), and how many there were. */
  lateWithin1s: number;
  latePolls: number;
  redisCmdsPerS: number;
  redisMiB: number;
  bouncerClients: number;
  bouncerServers: number;
  bouncerWaiting: number;
  pgBackends: number;
  pgTxPerS: number;
  walKiBPerS: number;
  /** CPU of each service group in this window, % of one core. */
  cpu: Record<string, number>;
  events: string[];
}

/** `worker-image#2` → `worker-image`; `redis:7001` → `redis`. */
export const groupOf = (label: string): string => label.replace(/#\d+$/, '').replace(/:\d+$/, '');

const sorted = (a: number[]): number[] => a.slice().sort((x, y) => x - y);

export function makeRow(label: string, a: Snapshot, b: Snapshot, w: Window, targetRps: number, events: string[]): Row {
  const s = Math.max(0.001, (b.at - a.at) / 1000);
  const sub = sorted(w.submitMs);
  const pol = sorted(w.pollMs);
  const late = diffHistograms(b.lateness, a.lateness);
  const cpu: Record<string, number> = {};
  for (const [k, v] of Object.entries(b.cpu)) {
    const g = groupOf(k);
    cpu[g] = (cpu[g] ?? 0) + (100 * Math.max(0, v - (a.cpu[k] ?? 0))) / s;
  }
  return {
    label,
    seconds: s,
    targetRps,
    submitsPerS: w.accepted / s,
    refused: Object.values(w.refused).reduce((x, y) => x + y, 0) + w.skipped,
    completedPerS: (b.completed - a.completed) / s,
    failed: b.failed - a.failed,
    submitP50: pct(sub, 50),
    submitP99: pct(sub, 99),
    pollsPerS: w.polls / s,
    pollP50: pct(pol, 50),
    pollP99: pct(pol, 99),
    messagesPerS: w.messages / s,
    lateP50: 1000 * histogramQuantile(late, 0.5),
    lateP99: 1000 * histogramQuantile(late, 0.99),
    lateWithin1s: shareAtMost(late, 1),
    latePolls: late.count,
    redisCmdsPerS: redisCommandsBetween(a, b) / s,
    redisMiB: b.redisMemory / 2 ** 20,
    bouncerClients: b.bouncerClients,
    bouncerServers: b.bouncerServers,
    bouncerWaiting: b.bouncerWaiting,
    pgBackends: b.pgBackends,
    pgTxPerS: (b.pgXacts - a.pgXacts) / s,
    walKiBPerS: (b.pgWalBytes - a.pgWalBytes) / 1024 / s,
    cpu,
    events,
  };
}

/** Merges windows into one (the total row). */
export function mergeWindows(ws: Window[]): Window {
  const m = new Window();
  for (const w of ws) {
    m.accepted += w.accepted;
    m.polls += w.polls;
    m.pollErrors += w.pollErrors;
    m.messages += w.messages;
    m.skipped += w.skipped;
    for (const [k, v] of Object.entries(w.refused)) m.refused[k] = (m.refused[k] ?? 0) + v;
    for (const x of w.submitMs) m.submitMs.push(x);
    for (const x of w.pollMs) m.pollMs.push(x);
    for (const x of w.messagesMs) m.messagesMs.push(x);
  }
  return m;
}

const f0 = (n: number): string => (Number.isFinite(n) ? n.toFixed(0) : '–');
const f1 = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : '–');

/** `12 / 340 (99.8 %)`; `–` for a window in which no worker claimed a poll. */
const late = (r: Row): string => (r.latePolls > 0 ? `${f0(r.lateP50)} / ${f0(r.lateP99)} (${(100 * r.lateWithin1s).toFixed(1)} %)` : '–');

export function throughputTable(rows: Row[]): string {
  const head =
    '| window | target req/s | submits/s | refused | completed/s | failed | submit p50 / p99 ms | polls/s | poll p50 / p99 ms | messages/s | worker poll lateness p50 / p99 ms (≤ 1 s) | events |\n|---|---|---|---|---|---|---|---|---|---|---|---|';
  return [
    head,
    ...rows.map(
      (r) =>
        `| ${r.label} | ${f1(r.targetRps)} | ${f1(r.submitsPerS)} | ${r.refused} | ${f1(r.completedPerS)} | ${r.failed} | ${f0(r.submitP50)} / ${f0(r.submitP99)} | ${f1(r.pollsPerS)} | ${f0(r.pollP50)} / ${f0(r.pollP99)} | ${f1(r.messagesPerS)} | ${late(r)} | ${r.events.join('; ') || '–'} |`,
    ),
  ].join('\n');
}

export function dataTable(rows: Row[]): string {
  const head =
    '| window | Redis cmds/s | Redis MiB (masters) | PgBouncer clients / servers (waiting) | Postgres backends | Postgres tx/s | WAL KiB/s |\n|---|---|---|---|---|---|---|';
  return [
    head,
    ...rows.map(
      (r) =>
        `| ${r.label} | ${f0(r.redisCmdsPerS)} | ${f1(r.redisMiB)} | ${r.bouncerClients} / ${r.bouncerServers} (${r.bouncerWaiting}) | ${r.pgBackends} | ${f0(r.pgTxPerS)} | ${f0(r.walKiBPerS)} |`,
    ),
  ].join('\n');
}

/** CPU per service group per window, % of one core (200 % = both cores of this machine). */
export function cpuTable(rows: Row[]): string {
  const groups = [...new Set(rows.flatMap((r) => Object.keys(r.cpu)))].sort();
  const head = `| window | ${groups.join(' | ')} | all |\n|---|${groups.map(() => '---').join('|')}|---|`;
  return [
    head,
    ...rows.map((r) => `| ${r.label} | ${groups.map((g) => f0(r.cpu[g] ?? NaN)).join(' | ')} | ${f0(Object.values(r.cpu).reduce((x, y) => x + y, 0))} |`),
  ].join('\n');
}

/** Each process over the whole run: CPU seconds, % of a core, RSS at the end and the largest RSS sampled. */
export function processTable(first: Snapshot, last: Snapshot, peakRss: Map<string, number>): string {
  const s = (last.at - first.at) / 1000;
  const head = '| process | CPU s | % of a core | RSS MiB (end) | RSS MiB (peak sampled) |\n|---|---|---|---|---|';
  const labels = Object.keys(last.cpu).sort();
  return [
    head,
    ...labels.map((l) => {
      const c = Math.max(0, (last.cpu[l] ?? 0) - (first.cpu[l] ?? 0));
      return `| ${l} | ${f1(c)} | ${f0((100 * c) / s)} | ${f0(last.rss[l] ?? NaN)} | ${f0(peakRss.get(l) ?? NaN)} |`;
    }),
  ].join('\n');
}
