import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { call, qs, type UsageGroup, type UsageReport } from '../api';
import { LineChart } from '../chart';
import { ErrorText, Loading, money, Select } from '../ui';

type Range = 'hour' | 'day' | 'month';
/** The usage report's resolution is the hour (docs/management-api.md "Usage"): the last hour is one or two buckets. */
const RANGES: Record<Range, { seconds: number; bucket: 'hour' | 'day' }> = {
  hour: { seconds: 3600, bucket: 'hour' },
  day: { seconds: 86400, bucket: 'hour' },
  month: { seconds: 30 * 86400, bucket: 'day' },
};

const ms = (v: number | null) => (v === null ? '—' : `${v} ms`);
const cell = (v: string | number | null | undefined) => (v === null || v === undefined ? '—' : String(v));

/** Usage from `GET /api/usage` (the admin's) or `GET /api/usage/self` (a customer's): charts over time and a table by `by`. */
export function UsagePanel({ path, by, byLabel }: { path: '/api/usage' | '/api/usage/self'; by: string; byLabel: string }) {
  const [range, setRange] = useState<Range>('day');
  const { seconds, bucket } = RANGES[range];
  // one "now" per range choice, so the query key is stable while the page is open
  const from = useMemo(() => Math.floor(Date.now() / 1000) - seconds, [seconds]);
  const series = useQuery({ queryKey: [path, bucket, from], queryFn: () => call<UsageReport>(path + qs({ from, group_by: bucket })) });
  const table = useQuery({ queryKey: [path, by, from], queryFn: () => call<UsageReport>(path + qs({ from, group_by: by })) });
  const chart = useMemo(() => {
    const rows = [...(series.data?.groups ?? [])].sort((a, b) => ((a[bucket] ?? '') < (b[bucket] ?? '') ? -1 : 1));
    const x = rows.map((g) => Date.parse(bucket === 'day' ? `${g.day}T00:00:00Z` : (g.hour ?? '')) / 1000);
    return {
      x,
      volume: [
        { label: 'tasks', values: rows.map((g) => g.tasks), color: '#1f5fbf' },
        { label: 'task failures', values: rows.map((g) => g.task_failures), color: '#b3261e' },
        { label: 'chat calls', values: rows.map((g) => g.chat_calls), color: '#2e7d32' },
        { label: 'chat failures', values: rows.map((g) => g.chat_failures), color: '#8a4b00' },
      ],
      latency: [
        { label: 'task p50 ms', values: rows.map((g) => g.task_p50_ms), color: '#1f5fbf' },
        { label: 'task p99 ms', values: rows.map((g) => g.task_p99_ms), color: '#6a1b9a' },
      ],
      spend: [{ label: 'spend', values: rows.map((g) => g.spend), color: '#2e7d32' }],
    };
  }, [series.data, bucket]);
  return (
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage</h2>
      <Select
        label="Range"
        name="range"
        value={range}
        onChange={(v) => setRange(v as Range)}
        options={[
          ['hour', 'Last hour'],
          ['day', 'Last day (by hour)'],
          ['month', 'Last 30 days (by day)'],
        ]}
      />
      <ErrorText error={series.error ?? table.error} />
      {series.isPending ? <Loading /> : null}
      {series.data ? (
        <p className="muted">
          {series.data.counted_until > 0
            ? `Counted until ${new Date(series.data.counted_until * 1000).toISOString()} (the rollup trails the clock by about a minute).`
            : 'Nothing has been counted yet (the rollup counts a task about a minute after it is settled).'}
        </p>
      ) : null}
      {chart.x.length ? (
        <div className="charts">
          <LineChart title={`Tasks and calls per ${bucket}`} x={chart.x} series={chart.volume} />
          <LineChart title="Task latency" x={chart.x} series={chart.latency} />
          <LineChart title="Spend" x={chart.x} series={chart.spend} />
        </div>
      ) : series.data ? (
        <p className="muted">Nothing counted in this range yet.</p>
      ) : null}
      {table.data ? <UsageTable groups={table.data.groups} dims={table.data.group_by} byLabel={byLabel} /> : null}
    </section>
  );
}

function UsageTable({ groups, dims, byLabel }: { groups: UsageGroup[]; dims: string[]; byLabel: string }) {
  return (
    <table>
      <caption>{byLabel}</caption>
      <thead>
        <tr>
          {dims.map((d) => (
            <th key={d} scope="col">
              {d}
            </th>
          ))}
          <th scope="col">tasks</th>
          <th scope="col">failures</th>
          <th scope="col">chat calls</th>
          <th scope="col">chat failures</th>
          <th scope="col">spend</th>
          <th scope="col">p50</th>
          <th scope="col">p99</th>
        </tr>
      </thead>
      <tbody>
        {groups.map((g, i) => (
          <tr key={i}>
            {dims.map((d) => (
              <td key={d}>{cell((g as unknown as Record<string, string | number | null | undefined>)[d])}</td>
            ))}
            <td>{g.tasks}</td>
            <td>{g.task_failures}</td>
            <td>{g.chat_calls}</td>
            <td>{g.chat_failures}</td>
            <td>{money(g.spend)}</td>
            <td>{ms(g.task_p50_ms ?? g.chat_p50_ms)}</td>
            <td>{ms(g.task_p99_ms ?? g.chat_p99_ms)}</td>
          </tr>
        ))}
        {groups.length === 0 ? (
          <tr>
            <td colSpan={dims.length + 7}>No usage in this range.</td>
          </tr>
        ) : null}
      </tbody>
    </table>
  );
}

export function Overview() {
  return (
    <>
      <h1>Overview</h1>
      <UsagePanel path="/api/usage" by="model,channel" byLabel="By model and channel" />
      <p>
        Also: the <a href="/admin/queues">queue dashboard</a> and the <a href="/docs">API docs</a>.
      </p>
    </>
  );
}
