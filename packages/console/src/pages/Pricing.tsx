import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { call, type Group, type Price } from '../api';
import { ErrorText, Loading, Modal } from '../ui';

/** One changed field of one row, for the review before saving. */
interface Change {
  row: string;
  field: string;
  before: string;
  after: string;
}

/** Rows as editable text; a review dialog lists every change (before → after); only changed rows are sent. */
function useEditable<T>(rows: T[] | undefined, id: (r: T) => string, fields: Array<keyof T & string>) {
  const [edits, setEdits] = useState<Record<string, Record<string, string>>>({});
  const show = (v: unknown): string =>
    v === null || v === undefined ? '' : Array.isArray(v) ? v.join(', ') : typeof v === 'object' ? JSON.stringify(v) : String(v as string | number | boolean);
  const value = (r: T, f: keyof T & string) => edits[id(r)]?.[f] ?? show(r[f]);
  const edit = (r: T, f: keyof T & string, v: string) => setEdits((e) => ({ ...e, [id(r)]: { ...e[id(r)], [f]: v } }));
  const changes: Change[] = [];
  for (const r of rows ?? [])
    for (const f of fields) {
      const after = value(r, f);
      if (after !== show(r[f])) changes.push({ row: id(r), field: f, before: show(r[f]), after });
    }
  return { value, edit, changes, clear: () => setEdits({}) };
}

function Review({ changes, onSave, pending, error }: { changes: Change[]; onSave: () => void; pending: boolean; error: unknown }) {
  return (
    <Modal title="Review changes" trigger={`Review ${changes.length} change(s)`} triggerDisabled={changes.length === 0}>
      <table className="diff">
        <caption className="sr-only">Changes to save</caption>
        <thead>
          <tr>
            <th scope="col">Row</th>
            <th scope="col">Field</th>
            <th scope="col">Before</th>
            <th scope="col">After</th>
          </tr>
        </thead>
        <tbody>
          {changes.map((c) => (
            <tr key={`${c.row}.${c.field}`}>
              <td>{c.row}</td>
              <td>{c.field}</td>
              <td>
                <del>{c.before || '(empty)'}</del>
              </td>
              <td>
                <ins>{c.after || '(empty)'}</ins>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <button type="button" onClick={onSave} disabled={pending || changes.length === 0}>
        Save
      </button>
      <ErrorText error={error} />
    </Modal>
  );
}

const numOrNull = (s: string) => (s.trim() === '' ? null : Number(s));
const listOrNull = (s: string) => {
  const xs = s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  return xs.length ? xs : null;
};

export function Pricing() {
  const qc = useQueryClient();
  const prices = useQuery({ queryKey: ['prices'], queryFn: () => call<Price[]>('/api/prices') });
  const groups = useQuery({ queryKey: ['groups'], queryFn: () => call<Group[]>('/api/groups') });
  const p = useEditable(prices.data, (r) => r.key, ['price', 'description']);
  const g = useEditable(groups.data, (r) => r.name, ['price_ratio', 'models', 'rps_limit', 'inflight_limit']);
  const savePrices = useMutation({
    mutationFn: () => {
      const rows = [...new Set(p.changes.map((c) => c.row))].map((key) => {
        const r = prices.data!.find((x) => x.key === key)!;
        return { key, price: Number(p.value(r, 'price')), description: p.value(r, 'description') };
      });
      return call<Price[]>('/api/prices', { method: 'PUT', body: rows });
    },
    onSuccess: (rows) => {
      qc.setQueryData(['prices'], rows);
      p.clear();
    },
  });
  const saveGroups = useMutation({
    mutationFn: () => {
      const rows = [...new Set(g.changes.map((c) => c.row))].map((name) => {
        const r = groups.data!.find((x) => x.name === name)!;
        return {
          name,
          price_ratio: Number(g.value(r, 'price_ratio')),
          models: listOrNull(g.value(r, 'models')),
          rps_limit: numOrNull(g.value(r, 'rps_limit')),
          inflight_limit: numOrNull(g.value(r, 'inflight_limit')),
        };
      });
      return call<Group[]>('/api/groups', { method: 'PUT', body: rows });
    },
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['groups'] });
      g.clear();
    },
  });
  return (
    <>
      <h1>Prices and groups</h1>
      <h2>Prices</h2>
      <ErrorText error={prices.error} />
      {prices.isPending ? <Loading /> : null}
      {prices.data ? (
        <>
          <Review changes={p.changes} onSave={() => savePrices.mutate()} pending={savePrices.isPending} error={savePrices.error} />
          <table>
            <caption className="sr-only">Prices</caption>
            <thead>
              <tr>
                <th scope="col">Billing key</th>
                <th scope="col">Price</th>
                <th scope="col">Description</th>
              </tr>
            </thead>
            <tbody>
              {prices.data.map((r) => (
                <tr key={r.key}>
                  <th scope="row">{r.key}</th>
                  <td>
                    <input
                      aria-label={`price of ${r.key}`}
                      type="number"
                      step="any"
                      value={p.value(r, 'price')}
                      onChange={(e) => p.edit(r, 'price', e.target.value)}
                    />
                  </td>
                  <td>
                    <input
                      aria-label={`description of ${r.key}`}
                      value={p.value(r, 'description')}
                      onChange={(e) => p.edit(r, 'description', e.target.value)}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
      <h2>Groups</h2>
      <ErrorText error={groups.error} />
      {groups.data ? (
        <>
          <Review changes={g.changes} onSave={() => saveGroups.mutate()} pending={saveGroups.isPending} error={saveGroups.error} />
          <table>
            <caption className="sr-only">Groups</caption>
            <thead>
              <tr>
                <th scope="col">Group</th>
                <th scope="col">Price ratio</th>
                <th scope="col">Models (empty: all)</th>
                <th scope="col">rps limit</th>
                <th scope="col">In-flight limit</th>
              </tr>
            </thead>
            <tbody>
              {groups.data.map((r) => (
                <tr key={r.name}>
                  <th scope="row">{r.name}</th>
                  {(['price_ratio', 'models', 'rps_limit', 'inflight_limit'] as const).map((f) => (
                    <td key={f}>
                      <input aria-label={`${f} of ${r.name}`} value={g.value(r, f)} onChange={(e) => g.edit(r, f, e.target.value)} />
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
    </>
  );
}
