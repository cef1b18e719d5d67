import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { call, type Channel, type ChannelKey, type ChannelTest } from '../api';
import { ErrorText, Field, listOf, Loading, Modal, numOrNull, Select, StatusBadge, TextArea, when } from '../ui';

const PROTOCOLS = ['gateway', 'fal', 'replicate', 'openai', 'bfl', 'kling', 'ark', 'gemini', 'dashscope', 'runway', 'mj-proxy', 'messages'];

/** Channels with their health and each key's; create, edit, enable/disable, test, bring a key back. */
export function Channels() {
  const list = useQuery({ queryKey: ['channels'], queryFn: () => call<Channel[]>('/api/channels') });
  return (
    <>
      <h1>Channels</h1>
      <div className="toolbar">
        <ChannelForm />
      </div>
      <ErrorText error={list.error} />
      {list.isPending ? <Loading /> : null}
      {list.data?.map((c) => (
        <ChannelCard key={c.id} c={c} />
      ))}
      {list.data?.length === 0 ? <p>No channels yet.</p> : null}
    </>
  );
}

function Health({ h }: { h: Pick<ChannelKey, 'status' | 'cooling_until' | 'disabled_reason' | 'last_error' | 'last_error_at'> }) {
  return (
    <>
      <StatusBadge status={h.status} />
      {h.status === 'cooling' ? <span> until {when(h.cooling_until)}</span> : null}
      {h.disabled_reason ? <span className="why"> {h.disabled_reason}</span> : null}
      {h.last_error ? (
        <div className="muted">
          last error {when(h.last_error_at)}: {h.last_error}
        </div>
      ) : null}
    </>
  );
}

function ChannelCard({ c }: { c: Channel }) {
  const qc = useQueryClient();
  const refresh = () => void qc.invalidateQueries({ queryKey: ['channels'] });
  const toggle = useMutation({
    mutationFn: () => call<Channel>(`/api/channels/${c.id}`, { method: 'PATCH', body: { enabled: !c.enabled } }),
    onSuccess: refresh,
  });
  const test = useMutation({ mutationFn: () => call<ChannelTest>(`/api/channels/${c.id}/test`, { method: 'POST', body: {} }) });
  const bringBack = useMutation({
    mutationFn: (keyId: string) => call<ChannelKey>(`/api/channels/${c.id}/keys/${keyId}`, { method: 'PATCH', body: { status: 'active' } }),
    onSuccess: refresh,
  });
  const disableKey = useMutation({
    mutationFn: (keyId: string) =>
      call<ChannelKey>(`/api/channels/${c.id}/keys/${keyId}`, {
        method: 'PATCH',
        body: { status: 'disabled', reason: 'disabled by an operator in the console' },
      }),
    onSuccess: refresh,
  });
  const passed = new Set(test.data?.keys.filter((k) => k.status === 'ok').map((k) => k.key_id) ?? []);
  return (
    <section className="card" aria-labelledby={`ch-${c.id}`} data-channel={c.name}>
      <h2 id={`ch-${c.id}`}>
        {c.name} <small className="muted">{c.protocol}</small>
      </h2>
      <p className="channel-health">
        {c.enabled ? <Health h={c} /> : <StatusBadge status="off" />} · priority {c.priority}, weight {c.weight} · models {c.models?.join(', ') ?? 'all'} ·
        groups {c.groups?.join(', ') ?? 'all'}
      </p>
      <div className="toolbar">
        <button type="button" onClick={() => test.mutate()} disabled={test.isPending}>
          {test.isPending ? 'Testing…' : 'Test'}
        </button>
        <button type="button" onClick={() => toggle.mutate()} disabled={toggle.isPending}>
          {c.enabled ? 'Disable' : 'Enable'}
        </button>
        <ChannelForm channel={c} />
      </div>
      <ErrorText error={test.error ?? toggle.error ?? bringBack.error ?? disableKey.error} />
      {test.data ? (
        <div role="status" className="test-answer">
          <strong>Test{test.data.model ? ` of ${test.data.model}` : ''}:</strong>
          <ul>
            {test.data.keys.map((k, i) => (
              <li key={k.key_id ?? i} data-test-status={k.status}>
                key {k.hint}: <StatusBadge status={k.status} /> in {k.latency_ms} ms{k.error ? ` — ${k.error}` : ''}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {c.keys.length ? (
        <table>
          <caption>Keys of {c.name}</caption>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Weight</th>
              <th scope="col">Health</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {c.keys.map((k) => (
              <tr key={k.id} data-key-hint={k.hint}>
                <td>
                  <code>{k.hint}</code>
                </td>
                <td>{k.weight}</td>
                <td>
                  <Health h={k} />
                </td>
                <td>
                  {k.status !== 'active' ? (
                    <button type="button" onClick={() => bringBack.mutate(k.id)} className={passed.has(k.id) ? 'primary' : undefined}>
                      Bring back{passed.has(k.id) ? ' (test passed)' : ''}
                    </button>
                  ) : (
                    <button type="button" onClick={() => disableKey.mutate(k.id)}>
                      Disable key
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="muted">One key (write-only).</p>
      )}
    </section>
  );
}

const json = (v: unknown) => JSON.stringify(v ?? {}, null, 2);

/** Create (no channel) or edit a channel. Keys are write-only: a blank field keeps the stored ones. */
function ChannelForm({ channel }: { channel?: Channel }) {
  const [open, setOpen] = useState(false);
  const init = () => ({
    name: channel?.name ?? '',
    protocol: channel?.protocol ?? 'gateway',
    base_url: channel?.base_url ?? '',
    keys: '',
    models: channel?.models?.join(', ') ?? '',
    groups: channel?.groups?.join(', ') ?? '',
    priority: String(channel?.priority ?? 0),
    weight: String(channel?.weight ?? 1),
    model_map: json(channel?.model_map),
    settings: json(channel?.settings),
  });
  const [f, setF] = useState(init);
  const set = (k: keyof ReturnType<typeof init>) => (v: string) => setF((x) => ({ ...x, [k]: v }));
  const qc = useQueryClient();
  const save = useMutation({
    mutationFn: async () => {
      const parse = (field: string, text: string): unknown => {
        try {
          return JSON.parse(text || '{}');
        } catch {
          throw new Error(`${field}: not valid JSON`);
        }
      };
      const keys = listOf(f.keys);
      const body = {
        name: f.name.trim(),
        protocol: f.protocol,
        base_url: f.base_url.trim(),
        models: listOf(f.models),
        groups: listOf(f.groups),
        priority: numOrNull(f.priority) ?? 0,
        weight: numOrNull(f.weight) ?? 1,
        model_map: parse('model_map', f.model_map),
        settings: parse('settings', f.settings),
        ...(keys ? { api_keys: keys } : {}),
      };
      return channel ? call<Channel>(`/api/channels/${channel.id}`, { method: 'PATCH', body }) : call<Channel>('/api/channels', { method: 'POST', body });
    },
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ['channels'] });
      setOpen(false);
    },
  });
  return (
    <Modal
      title={channel ? `Edit ${channel.name}` : 'New channel'}
      open={open}
      onOpenChange={(o) => {
        setOpen(o);
        if (o) {
          setF(init());
          save.reset();
        }
      }}
      trigger={channel ? 'Edit' : 'New channel'}
    >
      <form
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate();
        }}
      >
        <Field label="Name" value={f.name} onChange={set('name')} />
        <Select label="Protocol" value={f.protocol} onChange={set('protocol')} options={PROTOCOLS.map((p) => [p, p])} />
        <Field label="Base URL" value={f.base_url} onChange={set('base_url')} />
        <Field
          label={channel ? 'Keys (comma separated; blank keeps the stored ones)' : 'Keys (comma separated)'}
          type="password"
          value={f.keys}
          onChange={set('keys')}
        />
        <Field label="Models (comma separated; empty: all)" value={f.models} onChange={set('models')} />
        <Field label="Groups (comma separated; empty: all)" value={f.groups} onChange={set('groups')} />
        <Field label="Priority" type="number" value={f.priority} onChange={set('priority')} />
        <Field label="Weight" type="number" value={f.weight} onChange={set('weight')} />
        <TextArea label="model_map (JSON)" value={f.model_map} onChange={set('model_map')} />
        <TextArea label="settings (JSON)" value={f.settings} onChange={set('settings')} />
        <button type="submit" disabled={save.isPending}>
          Save channel
        </button>
        <ErrorText error={save.error} />
      </form>
    </Modal>
  );
}
