import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { call, qs, type Account, type Page } from '../api';
import { Link, useNav } from '../router';
import { ErrorText, Field, Loading, Modal, money, Pager, usePager, when } from '../ui';

/** Accounts: a search (exact id or part of the name), newest first, keyset pages; a dialog creates one. */
export function Accounts() {
  const [q, setQ] = useState('');
  const [search, setSearch] = useState('');
  const pager = usePager();
  const list = useQuery({
    queryKey: ['accounts', search, pager.cursor],
    queryFn: () => call<Page<Account>>('/api/accounts' + qs({ q: search, limit: 20, cursor: pager.cursor })),
    placeholderData: keepPreviousData,
  });
  const onSearch = (e: FormEvent) => {
    e.preventDefault();
    pager.reset();
    setSearch(q.trim());
  };
  return (
    <>
      <h1>Accounts</h1>
      <div className="toolbar">
        <form role="search" onSubmit={onSearch} className="inline">
          <Field label="Search by id or name" name="q" value={q} onChange={setQ} />
          <button type="submit">Search</button>
        </form>
        <CreateAccount />
      </div>
      <ErrorText error={list.error} />
      {list.isPending ? <Loading /> : null}
      {list.data ? (
        <>
          <table>
            <caption className="sr-only">Accounts</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Group</th>
                <th scope="col">Balance</th>
                <th scope="col">Held</th>
                <th scope="col">Spent</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {list.data.items.map((a) => (
                <tr key={a.id}>
                  <td>
                    <Link to={`accounts/${a.id}`}>{a.name}</Link>
                  </td>
                  <td>{a.group}</td>
                  <td>{money(a.balance)}</td>
                  <td>{money(a.held)}</td>
                  <td>{money(a.spent)}</td>
                  <td>{when(a.created_at)}</td>
                </tr>
              ))}
              {list.data.items.length === 0 ? (
                <tr>
                  <td colSpan={6}>No account matches.</td>
                </tr>
              ) : null}
            </tbody>
          </table>
          <Pager pager={pager} nextCursor={list.data.next_cursor} />
        </>
      ) : null}
    </>
  );
}

function CreateAccount() {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [group, setGroup] = useState('');
  const { go } = useNav();
  const qc = useQueryClient();
  const create = useMutation({
    mutationFn: () => call<Account>('/api/accounts', { method: 'POST', body: { name: name.trim(), ...(group.trim() ? { group: group.trim() } : {}) } }),
    onSuccess: (a) => {
      void qc.invalidateQueries({ queryKey: ['accounts'] });
      setOpen(false);
      go(`accounts/${a.id}`);
    },
  });
  return (
    <Modal
      title="New account"
      open={open}
      onOpenChange={(o) => {
        setOpen(o);
        if (o) create.reset();
      }}
      trigger="New account"
    >
      <form
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <Field label="Name" name="name" value={name} onChange={setName} />
        <Field label="Group (default: default)" name="group" value={group} onChange={setGroup} />
        <button type="submit" disabled={create.isPending}>
          Create account
        </button>
        <ErrorText error={create.error} />
      </form>
    </Modal>
  );
}
