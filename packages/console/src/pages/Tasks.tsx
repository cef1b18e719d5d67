import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { call, qs, type Page, type TaskDetail, type TaskResult, type TaskSummary } from '../api';
import { Link, useNav } from '../router';
import { ErrorText, Field, Loading, money, Pager, Select, StatusBadge, usePager, when } from '../ui';

const FILTERS = ['account_id', 'key_id', 'model', 'status', 'channel_id', 'pool'] as const;
type Filters = Record<(typeof FILTERS)[number] | 'from' | 'to', string>;

/** A datetime-local value (labelled UTC) as unix seconds. */
const unix = (date: string) => (date ? Math.floor(Date.parse(`${date}Z`) / 1000) : undefined);

/** Tasks and chat calls: filters (keyset pages, newest first) or a lookup by trace / request id. */
export function Tasks() {
  const { query } = useNav();
  const empty: Filters = { account_id: '', key_id: '', model: '', status: '', channel_id: '', pool: '', from: '', to: '' };
  const initial = { ...empty, account_id: query.get('account_id') ?? '' };
  const [form, setForm] = useState<Filters>(initial);
  const [filters, setFilters] = useState<Filters>(initial);
  const [lookup, setLookup] = useState('');
  const [lookingUp, setLookingUp] = useState('');
  const pager = usePager();
  const set = (k: keyof Filters) => (v: string) => setForm((f) => ({ ...f, [k]: v }));
  const list = useQuery({
    queryKey: ['tasks', filters, pager.cursor],
    enabled: !lookingUp,
    placeholderData: keepPreviousData,
    queryFn: () => call<Page<TaskSummary>>('/api/tasks' + qs({ ...filters, from: unix(filters.from), to: unix(filters.to), limit: 25, cursor: pager.cursor })),
  });
  const found = useQuery({
    queryKey: ['task-lookup', lookingUp],
    enabled: Boolean(lookingUp),
    queryFn: () => {
      const id = lookingUp.trim();
      // a trace id is 32 hex digits (X-Trace-Id); anything else is a request id (X-Request-Id)
      return call<TaskSummary[]>('/api/tasks' + qs(/^[0-9a-f]{32}$/i.test(id) ? { trace_id: id.toLowerCase() } : { request_id: id }));
    },
  });
  const apply = (e: FormEvent) => {
    e.preventDefault();
    pager.reset();
    setLookingUp('');
    setFilters(form);
  };
  const rows = lookingUp ? found.data : list.data?.items;
  const q = lookingUp ? found : list;
  return (
    <>
      <h1>Tasks and calls</h1>
      <form
        role="search"
        aria-label="Find by trace or request id"
        className="inline"
        onSubmit={(e) => {
          e.preventDefault();
          setLookingUp(lookup.trim());
        }}
      >
        <Field label="Trace id or request id" name="lookup" value={lookup} onChange={setLookup} />
        <button type="submit">Find</button>
      </form>
      <form aria-label="Filters" className="filters" onSubmit={apply}>
        {FILTERS.filter((f) => f !== 'status' && f !== 'pool').map((f) => (
          <Field key={f} label={f.replace('_', ' ')} name={f} value={form[f]} onChange={set(f)} />
        ))}
        <Select
          label="status"
          name="status"
          value={form.status}
          onChange={set('status')}
          options={[['', 'any'], ...(['pending', 'processing', 'completed', 'failed'].map((s) => [s, s]) as Array<[string, string]>)]}
        />
        <Select
          label="pool"
          name="pool"
          value={form.pool}
          onChange={set('pool')}
          options={[['', 'any'], ...(['image', 'video', 'artgen', 'avatar', 'chat'].map((s) => [s, s]) as Array<[string, string]>)]}
        />
        <Field label="from (UTC)" name="from" type="datetime-local" value={form.from} onChange={set('from')} />
        <Field label="to (UTC)" name="to" type="datetime-local" value={form.to} onChange={set('to')} />
        <button type="submit">Apply filters</button>
      </form>
      <ErrorText error={q.error} />
      {q.isFetching && !rows ? <Loading /> : null}
      {rows ? <TaskTable rows={rows} /> : null}
      {!lookingUp && list.data ? <Pager pager={pager} nextCursor={list.data.next_cursor} /> : null}
    </>
  );
}

function TaskTable({ rows }: { rows: TaskSummary[] }) {
  return (
    <table>
      <caption className="sr-only">Tasks</caption>
      <thead>
        <tr>
          <th scope="col">Task</th>
          <th scope="col">Model</th>
          <th scope="col">Status</th>
          <th scope="col">Cost</th>
          <th scope="col">Created</th>
          <th scope="col">Error</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((t) => (
          <tr key={t.task_id}>
            <td>
              <Link to={`tasks/${t.task_id}`}>{t.task_id}</Link>
            </td>
            <td>{t.model}</td>
            <td>
              <StatusBadge status={t.status} />
            </td>
            <td>{t.cost === undefined ? '—' : money(t.cost)}</td>
            <td>{when(t.created_at)}</td>
            <td>{typeof t.error === 'string' ? t.error : (t.error?.message ?? '')}</td>
          </tr>
        ))}
        {rows.length === 0 ? (
          <tr>
            <td colSpan={6}>No task on this page (a page reads a bounded slice of the table: older pages may still have some).</td>
          </tr>
        ) : null}
      </tbody>
    </table>
  );
}

/** A task's result: image thumbnails (each a link to the full file), a video player, the art suite's buttons. */
export function Result({ result, buttons }: { result: TaskResult | null | undefined; buttons?: Array<{ label?: string; emoji?: string; customId?: string }> }) {
  if (!result) return null;
  return (
    <section aria-labelledby="result-title" className="result">
      <h2 id="result-title">Result</h2>
      <div className="thumbs">
        {result.images?.map((img, i) => (
          <a key={img.url} href={img.url} target="_blank" rel="noreferrer">
            <img src={img.url} alt={`result image ${i + 1}`} width={180} />
          </a>
        ))}
      </div>
      {result.videos?.map((v) => (
        <video key={v.url[0]} src={v.url[0]} controls preload="metadata" aria-label="result video" />
      ))}
      {result.text ? <pre>{result.text}</pre> : null}
      {buttons?.length ? (
        <p>
          Art buttons:{' '}
          {buttons.map((b, i) => (
            <span key={b.customId ?? i} className="chip">
              {b.label || b.emoji}
            </span>
          ))}
        </p>
      ) : null}
    </section>
  );
}

/** The operator's view of one task: request summary, timeline, money, error, trace id and the result. */
export function TaskPage({ id }: { id: string }) {
  const task = useQuery({ queryKey: ['task', id], queryFn: () => call<TaskDetail>(`/api/tasks/${encodeURIComponent(id)}`) });
  const t = task.data;
  return (
    <>
      <p>
        <Link to="tasks">← Tasks</Link>
      </p>
      <h1>Task {id}</h1>
      <ErrorText error={task.error} />
      {task.isPending ? <Loading /> : null}
      {t ? (
        <>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={t.status} />
            </dd>
            <dt>Model</dt>
            <dd>
              {t.model} ({t.pool})
            </dd>
            <dt>Account</dt>
            <dd>
              <Link to={`accounts/${t.account_id}`}>{t.account_id}</Link>
            </dd>
            <dt>Key</dt>
            <dd>{t.key_id ?? '—'}</dd>
            <dt>Channel</dt>
            <dd>{t.channel ? `${t.channel.name} (${t.channel.id})` : '—'}</dd>
            <dt>Upstream task</dt>
            <dd>{t.upstream_task_id ?? '—'}</dd>
            <dt>Price / cost</dt>
            <dd>
              {money(t.price)} / {money(t.cost)} {t.settled ? '(settled)' : '(not settled yet)'}
            </dd>
            <dt>Trace id</dt>
            <dd>
              <code>{t.trace_id ?? '—'}</code>
            </dd>
            <dt>Request id</dt>
            <dd>
              <code>{t.request_id ?? '—'}</code>
            </dd>
            <dt>Created / completed</dt>
            <dd>
              {when(t.created_at)} / {when(t.completed_at)}
            </dd>
          </dl>
          {t.error ? (
            <section className="task-error" aria-labelledby="why">
              <h2 id="why">Why it failed</h2>
              <p>
                {t.error.message}
                {t.error.code ? <span className="muted"> ({t.error.code})</span> : null}
              </p>
            </section>
          ) : null}
          {t.request ? (
            <section aria-labelledby="req">
              <h2 id="req">Request</h2>
              <pre>{JSON.stringify(t.request, null, 2)}</pre>
            </section>
          ) : null}
          {t.timeline?.length ? (
            <section aria-labelledby="tl">
              <h2 id="tl">Timeline</h2>
              <ol className="timeline">
                {t.timeline.map((e, i) => (
                  <li key={i}>
                    <strong>{e.event}</strong> {when(e.time)}
                    {e.amount !== undefined ? ` ${money(e.amount)}` : ''}
                    {e.detail ? ` — ${e.detail}` : ''}
                  </li>
                ))}
              </ol>
            </section>
          ) : null}
          {t.entries?.length ? (
            <section aria-labelledby="ledger">
              <h2 id="ledger">Ledger</h2>
              <ul>
                {t.entries.map((e, i) => (
                  <li key={i}>
                    {e.kind} {money(e.amount)} at {when(e.time)}
                  </li>
                ))}
              </ul>
            </section>
          ) : null}
          <Result result={t.result} buttons={t.native?.buttons} />
        </>
      ) : null}
    </>
  );
}
