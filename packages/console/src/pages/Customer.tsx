import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { ApiError, call, qs, session, type Balance, type LogItem, type Page, type PublicTask } from '../api';
import { Link } from '../router';
import { ErrorText, Loading, money, Pager, StatusBadge, usePager, when } from '../ui';
import { UsagePanel } from './Overview';
import { Result } from './Tasks';

/** The CSV of the key's last 30 days by day and model, fetched with the key (a plain link could not send it). */
async function downloadCsv(): Promise<void> {
  const from = Math.floor(Date.now() / 1000) - 30 * 86400;
  const res = await fetch('/api/usage/self' + qs({ from, group_by: 'day,model', format: 'csv' }), {
    headers: { authorization: `Bearer ${session.read()?.token ?? ''}` },
  });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { message?: string } | null;
    throw new ApiError(res.status, body?.message ?? `The gateway answered ${res.status}`);
  }
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = 'usage.csv';
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A customer's home: balance, usage by model and day, their tasks (keyset pages), the CSV and the playground. */
export function CustomerHome() {
  const balance = useQuery({ queryKey: ['balance'], queryFn: () => call<Balance>('/api/balance') });
  const pager = usePager();
  const logs = useQuery({
    queryKey: ['logs', pager.cursor],
    queryFn: () => call<Page<LogItem>>('/api/logs' + qs({ limit: 20, cursor: pager.cursor })),
    placeholderData: keepPreviousData,
  });
  const csv = useMutation({ mutationFn: downloadCsv });
  const b = balance.data;
  return (
    <>
      <h1>{b ? `Account ${b.name}` : 'Your account'}</h1>
      <ErrorText error={balance.error} />
      {b ? (
        <dl className="facts">
          <dt>Balance</dt>
          <dd data-testid="balance">{money(b.balance)}</dd>
          <dt>Available</dt>
          <dd>{money(b.available)}</dd>
          <dt>Held by running tasks</dt>
          <dd>{money(b.held)}</dd>
          <dt>Spent</dt>
          <dd>{money(b.spent)}</dd>
        </dl>
      ) : null}
      <div className="toolbar">
        <button type="button" onClick={() => csv.mutate()} disabled={csv.isPending}>
          Export usage (CSV, 30 days)
        </button>
        <a href="/playground/">Open the playground</a>
      </div>
      <ErrorText error={csv.error} />
      <UsagePanel path="/api/usage/self" by="model,day" byLabel="By model and day" />
      <h2>Activity</h2>
      <ErrorText error={logs.error} />
      {logs.isPending ? <Loading /> : null}
      {logs.data ? (
        <>
          <table>
            <caption className="sr-only">Your tasks and top-ups</caption>
            <thead>
              <tr>
                <th scope="col">What</th>
                <th scope="col">Model</th>
                <th scope="col">Status</th>
                <th scope="col">Amount</th>
                <th scope="col">Time</th>
              </tr>
            </thead>
            <tbody>
              {logs.data.items.map((it) => (
                <tr key={it.task_id ?? `e${it.entry_id}`}>
                  <td>{it.task_id ? <Link to={`tasks/${it.task_id}`}>{it.task_id}</Link> : it.type}</td>
                  <td>{it.model ?? ''}</td>
                  <td>{it.status ? <StatusBadge status={it.status} /> : ''}</td>
                  <td>{money(it.cost ?? it.amount)}</td>
                  <td>{when(it.time)}</td>
                </tr>
              ))}
              {logs.data.items.length === 0 ? (
                <tr>
                  <td colSpan={5}>Nothing yet.</td>
                </tr>
              ) : null}
            </tbody>
          </table>
          <Pager pager={pager} nextCursor={logs.data.next_cursor} />
        </>
      ) : null}
    </>
  );
}

/** A customer's task (GET /v1/tasks/{id} with their key), polled while it runs. */
export function CustomerTask({ id }: { id: string }) {
  const task = useQuery({
    queryKey: ['v1-task', id],
    queryFn: () => call<PublicTask>(`/v1/tasks/${encodeURIComponent(id)}`),
    refetchInterval: (q) => (q.state.data && ['completed', 'failed'].includes(q.state.data.status) ? false : 2000),
  });
  const t = task.data;
  const created = useMemo(() => (t ? when(t.created) : ''), [t]);
  return (
    <>
      <p>
        <Link to="">← Your account</Link>
      </p>
      <h1>Task {id}</h1>
      <ErrorText error={task.error} />
      {task.isPending ? <Loading /> : null}
      {t ? (
        <>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={t.status} /> {t.status === 'processing' ? `${t.progress} %` : ''}
            </dd>
            <dt>Model</dt>
            <dd>{t.model}</dd>
            <dt>Cost</dt>
            <dd>{money(t.cost)}</dd>
            <dt>Created / completed</dt>
            <dd>
              {created} / {when(t.completed)}
            </dd>
          </dl>
          {t.error ? (
            <p className="error" role="alert">
              {t.error.message}
            </p>
          ) : null}
          <Result result={t.result} />
        </>
      ) : null}
    </>
  );
}
