import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { call, qs, type Account as AccountView, type Key } from '../api';
import { Link } from '../router';
import { ErrorText, Field, listOf, Loading, Modal, money, numOrNull, Secret, Select, StatusBadge, when } from '../ui';

/** One account: its money, a top-up, its keys (create, rotate, revoke, cap and expiry). */
export function Account({ id }: { id: string }) {
  const account = useQuery({ queryKey: ['account', id], queryFn: () => call<AccountView>(`/api/accounts/${encodeURIComponent(id)}`) });
  const keys = useQuery({ queryKey: ['keys', id], queryFn: () => call<Key[]>('/api/keys' + qs({ account_id: id })) });
  const a = account.data;
  return (
    <>
      <p>
        <Link to="accounts">← Accounts</Link>
      </p>
      <h1>Account {a ? a.name : ''}</h1>
      <ErrorText error={account.error} />
      {account.isPending ? <Loading /> : null}
      {a ? (
        <>
          <dl className="facts">
            <dt>Id</dt>
            <dd>
              <code>{a.id}</code>
            </dd>
            <dt>Group</dt>
            <dd>{a.group}</dd>
            <dt>Balance</dt>
            <dd data-testid="balance">{money(a.balance)}</dd>
            <dt>Available</dt>
            <dd>{money(a.available)}</dd>
            <dt>Held</dt>
            <dd>{money(a.held)}</dd>
            <dt>Spent</dt>
            <dd>{money(a.spent)}</dd>
            <dt>Created</dt>
            <dd>{when(a.created_at)}</dd>
          </dl>
          <div className="toolbar">
            <TopUp account={a} />
            <CreateKey accountId={a.id} />
            <Link to={`tasks?account_id=${encodeURIComponent(a.id)}`}>Its tasks</Link>
          </div>
        </>
      ) : null}
      <h2>Keys</h2>
      <ErrorText error={keys.error} />
      {keys.data ? <KeyTable keys={keys.data} accountId={id} /> : null}
    </>
  );
}

/**
 * Top-up: the Idempotency-Key is made once when the dialog opens, so a double click (or a retry after a lost answer)
 * books the money once; the server answers the replay with 200 and credits nothing.
 */
function TopUp({ account }: { account: AccountView }) {
  const [open, setOpen] = useState(false);
  const [amount, setAmount] = useState('');
  const [note, setNote] = useState('');
  const [idem, setIdem] = useState('');
  const qc = useQueryClient();
  const topup = useMutation({
    mutationFn: () =>
      call<AccountView>(`/api/accounts/${encodeURIComponent(account.id)}/topups`, {
        method: 'POST',
        headers: { 'idempotency-key': idem },
        body: { amount: Number(amount), ...(note.trim() ? { note: note.trim() } : {}) },
      }),
    onSuccess: (a) => {
      qc.setQueryData(['account', account.id], a);
      void qc.invalidateQueries({ queryKey: ['accounts'] });
    },
  });
  return (
    <Modal
      title={`Top up ${account.name}`}
      open={open}
      onOpenChange={(o) => {
        setOpen(o);
        if (o) {
          setIdem(crypto.randomUUID());
          setAmount('');
          setNote('');
          topup.reset();
        }
      }}
      trigger="Top up"
    >
      <form
        onSubmit={(e) => {
          e.preventDefault();
          // not disabled while pending on purpose: a second click is safe (same Idempotency-Key) — it proves the point
          topup.mutate();
        }}
      >
        <Field label="Amount" name="amount" type="number" value={amount} onChange={setAmount} />
        <Field label="Note" name="note" value={note} onChange={setNote} />
        <button type="submit">Book top-up</button>
        <ErrorText error={topup.error} />
        {topup.isSuccess ? (
          <p role="status" className="ok">
            Booked. Balance now {money(topup.data.balance)}.
          </p>
        ) : null}
      </form>
    </Modal>
  );
}

function CreateKey({ accountId }: { accountId: string }) {
  const [open, setOpen] = useState(false);
  const [f, setF] = useState({ name: '', models: '', group: '', rps: '', inflight: '', cap: '', window: '', expires: '' });
  const set = (k: keyof typeof f) => (v: string) => setF((x) => ({ ...x, [k]: v }));
  const qc = useQueryClient();
  const create = useMutation({
    mutationFn: () =>
      call<Key>('/api/keys', {
        method: 'POST',
        body: {
          account_id: accountId,
          ...(f.name.trim() ? { name: f.name.trim() } : {}),
          ...(listOf(f.models) ? { models: listOf(f.models) } : {}),
          ...(f.group.trim() ? { group: f.group.trim() } : {}),
          ...(numOrNull(f.rps) !== null ? { rps_limit: numOrNull(f.rps) } : {}),
          ...(numOrNull(f.inflight) !== null ? { inflight_limit: numOrNull(f.inflight) } : {}),
          ...(numOrNull(f.cap) !== null ? { max_spend: numOrNull(f.cap) } : {}),
          ...(f.window ? { spend_window: f.window } : {}),
          ...(f.expires ? { expires_at: Math.floor(Date.parse(`${f.expires}T00:00:00Z`) / 1000) } : {}),
        },
      }),
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['keys', accountId] }),
  });
  return (
    <Modal
      title="New API key"
      open={open}
      onOpenChange={(o) => {
        setOpen(o);
        if (o) create.reset();
      }}
      trigger="New key"
    >
      {create.data?.key ? (
        <Secret label="The new key" value={create.data.key} />
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            create.mutate();
          }}
        >
          <Field label="Name" name="key-name" value={f.name} onChange={set('name')} />
          <Field label="Models (comma separated; empty: all)" name="models" value={f.models} onChange={set('models')} />
          <Field label="Group (empty: the account's)" name="key-group" value={f.group} onChange={set('group')} />
          <Field label="Requests per second (empty: the group's)" name="rps" type="number" value={f.rps} onChange={set('rps')} />
          <Field label="Tasks in flight (empty: the group's)" name="inflight" type="number" value={f.inflight} onChange={set('inflight')} />
          <Field label="Spending cap (empty: none)" name="max_spend" type="number" value={f.cap} onChange={set('cap')} />
          <Select
            label="Cap window"
            name="spend_window"
            value={f.window}
            onChange={set('window')}
            options={[
              ['', 'the key’s life'],
              ['day', 'per UTC day'],
              ['month', 'per UTC month'],
            ]}
          />
          <Field label="Expires on (UTC date; empty: never)" name="expires" type="date" value={f.expires} onChange={set('expires')} />
          <button type="submit" disabled={create.isPending}>
            Create key
          </button>
          <ErrorText error={create.error} />
        </form>
      )}
    </Modal>
  );
}

function KeyTable({ keys, accountId }: { keys: Key[]; accountId: string }) {
  return (
    <table>
      <caption className="sr-only">Keys of the account</caption>
      <thead>
        <tr>
          <th scope="col">Key</th>
          <th scope="col">Status</th>
          <th scope="col">Models</th>
          <th scope="col">Group</th>
          <th scope="col">Limits</th>
          <th scope="col">Cap (spent)</th>
          <th scope="col">Expires</th>
          <th scope="col">Actions</th>
        </tr>
      </thead>
      <tbody>
        {keys.map((k) => (
          <tr key={k.id} data-key-id={k.id}>
            <td>
              {k.name ?? '—'} <code>{k.prefix}…</code>
            </td>
            <td>
              <StatusBadge status={k.status} />
            </td>
            <td>{k.models?.join(', ') ?? 'all'}</td>
            <td>{k.group ?? 'account’s'}</td>
            <td>
              {k.rps_limit ?? 'group'} rps / {k.inflight_limit ?? 'group'} in flight
            </td>
            <td>{k.max_spend === null ? 'none' : `${money(k.max_spend)} per ${k.spend_window ?? 'life'} (${money(k.spent)})`}</td>
            <td>{when(k.expires_at)}</td>
            <td>{k.status === 'active' ? <KeyActions k={k} accountId={accountId} /> : `revoked ${when(k.revoked_at)}`}</td>
          </tr>
        ))}
        {keys.length === 0 ? (
          <tr>
            <td colSpan={8}>No keys yet.</td>
          </tr>
        ) : null}
      </tbody>
    </table>
  );
}

function KeyActions({ k, accountId }: { k: Key; accountId: string }) {
  const qc = useQueryClient();
  const done = () => void qc.invalidateQueries({ queryKey: ['keys', accountId] });
  const revoke = useMutation({ mutationFn: () => call<Key>(`/api/keys/${k.id}`, { method: 'DELETE' }), onSuccess: done });
  const rotate = useMutation({ mutationFn: () => call<Key>(`/api/keys/${k.id}/rotate`, { method: 'POST', body: {} }), onSuccess: done });
  const [cap, setCap] = useState(k.max_spend === null ? '' : String(k.max_spend));
  const [windowV, setWindow] = useState<string>(k.spend_window ?? '');
  const [expires, setExpires] = useState(k.expires_at ? new Date(k.expires_at * 1000).toISOString().slice(0, 10) : '');
  const patch = useMutation({
    mutationFn: () =>
      call<Key>(`/api/keys/${k.id}`, {
        method: 'PATCH',
        body: {
          max_spend: numOrNull(cap),
          ...(numOrNull(cap) !== null ? { spend_window: windowV || null } : {}),
          expires_at: expires ? Math.floor(Date.parse(`${expires}T00:00:00Z`) / 1000) : null,
        },
      }),
    onSuccess: done,
  });
  return (
    <div className="actions">
      <Modal title="Rotate key" trigger="Rotate">
        {rotate.data?.key ? (
          <Secret label="The new secret" value={rotate.data.key} />
        ) : (
          <>
            <p>A new secret under the same key; the old one keeps working for an hour.</p>
            <button type="button" onClick={() => rotate.mutate()} disabled={rotate.isPending}>
              Rotate now
            </button>
          </>
        )}
        <ErrorText error={rotate.error} />
      </Modal>
      <Modal title="Cap and expiry" trigger="Cap / expiry">
        <form
          onSubmit={(e) => {
            e.preventDefault();
            patch.mutate();
          }}
        >
          <Field label="Spending cap (empty: none)" type="number" value={cap} onChange={setCap} />
          <Select
            label="Cap window"
            value={windowV}
            onChange={setWindow}
            options={[
              ['', 'the key’s life'],
              ['day', 'per UTC day'],
              ['month', 'per UTC month'],
            ]}
          />
          <Field label="Expires on (UTC date; empty: never)" type="date" value={expires} onChange={setExpires} />
          <button type="submit">Save</button>
          <ErrorText error={patch.error} />
          {patch.isSuccess ? <p role="status">Saved.</p> : null}
        </form>
      </Modal>
      <button type="button" className="danger" onClick={() => revoke.mutate()} disabled={revoke.isPending}>
        Revoke
      </button>
      <ErrorText error={revoke.error} />
    </div>
  );
}
