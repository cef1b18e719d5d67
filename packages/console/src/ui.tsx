import { Button, Dialog, DialogTrigger, Heading, Modal as AriaModal, ModalOverlay } from 'react-aria-components';
import { useId, useState, type ReactNode } from 'react';
import { ApiError } from './api';

/** Money as the API gives it (currency units, up to 6 decimals). */
export const money = (n: number | null | undefined): string => {
  if (n === null || n === undefined) return '—';
  const [int, dec = ''] = n.toFixed(6).replace(/0+$/, '').split('.');
  return `${int}.${dec.padEnd(2, '0')}`;
};

export const when = (t: number | null | undefined): string => (t ? new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 19) + ' UTC' : '—');

/** An error in words: the envelope's message, never a stack. */
export function ErrorText({ error }: { error: unknown }) {
  if (!error) return null;
  const words = error instanceof ApiError || error instanceof Error ? error.message : typeof error === 'string' ? error : 'Something went wrong.';
  return (
    <p className="error" role="alert">
      {words}
    </p>
  );
}

export function Loading() {
  return (
    <p className="muted" role="status">
      Loading…
    </p>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${status}`}>{status}</span>;
}

/** A labelled input; the label is tied to the control for screen readers and clicks. */
export function Field({
  label,
  value,
  onChange,
  type = 'text',
  placeholder,
  name,
  hint,
}: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  type?: string;
  placeholder?: string;
  name?: string;
  hint?: string;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        name={name}
        type={type}
        value={value}
        placeholder={placeholder}
        onChange={(e) => onChange(e.target.value)}
        aria-describedby={hint ? `${id}-hint` : undefined}
      />
      {hint ? (
        <small id={`${id}-hint`} className="muted">
          {hint}
        </small>
      ) : null}
    </div>
  );
}

export function TextArea({
  label,
  value,
  onChange,
  name,
  rows = 4,
}: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  name?: string;
  rows?: number;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <textarea id={id} name={name} rows={rows} value={value} onChange={(e) => onChange(e.target.value)} />
    </div>
  );
}

export function Select({
  label,
  value,
  onChange,
  options,
  name,
}: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  options: Array<[string, string]>;
  name?: string;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} name={name} value={value} onChange={(e) => onChange(e.target.value)}>
        {options.map(([v, l]) => (
          <option key={v} value={v}>
            {l}
          </option>
        ))}
      </select>
    </div>
  );
}

/**
 * A modal dialog (React Aria Components: focus contained and returned to the trigger, Escape and a click outside
 * close it, labelled by its heading, the page behind inert). `trigger` is the label of the button that opens it.
 */
export function Modal({
  title,
  trigger,
  triggerDisabled,
  children,
  open,
  onOpenChange,
}: {
  title: string;
  trigger: string;
  triggerDisabled?: boolean;
  children: ReactNode;
  open?: boolean;
  onOpenChange?: (open: boolean) => void;
}) {
  return (
    <DialogTrigger isOpen={open} onOpenChange={onOpenChange}>
      <Button isDisabled={triggerDisabled}>{trigger}</Button>
      <ModalOverlay className="overlay" isDismissable>
        <AriaModal className="dialog">
          <Dialog>
            <Heading slot="title">{title}</Heading>
            {children}
            <Button slot="close" className="close" aria-label="Close">
              ×
            </Button>
          </Dialog>
        </AriaModal>
      </ModalOverlay>
    </DialogTrigger>
  );
}

/** A secret shown once, with a copy button. */
export function Secret({ value, label }: { value: string; label: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="secret">
      <p>
        <strong>{label}</strong> — shown only now: copy it and keep it safe.
      </p>
      <code className="secret-value" data-testid="secret">
        {value}
      </code>
      {/* focus lands here when the secret appears (the form's button it replaced is gone), so Escape still closes */}
      <button
        type="button"
        autoFocus
        onClick={() => {
          navigator.clipboard.writeText(value).then(
            () => setCopied(true),
            () => setCopied(false),
          );
        }}
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}

/** Keyset paging: the cursors of the pages seen so far, so Back works without a total count. */
export function usePager() {
  const [stack, setStack] = useState<Array<string | null>>([null]);
  const cursor = stack[stack.length - 1] ?? null;
  return {
    cursor,
    page: stack.length,
    next: (c: string) => setStack((s) => [...s, c]),
    back: () => setStack((s) => (s.length > 1 ? s.slice(0, -1) : s)),
    reset: () => setStack([null]),
  };
}

export function Pager({ pager, nextCursor }: { pager: ReturnType<typeof usePager>; nextCursor: string | null | undefined }) {
  return (
    <nav className="pager" aria-label="Pages">
      <button type="button" onClick={pager.back} disabled={pager.page === 1}>
        Newer
      </button>
      <span>Page {pager.page}</span>
      <button type="button" onClick={() => nextCursor && pager.next(nextCursor)} disabled={!nextCursor}>
        Older
      </button>
    </nav>
  );
}

/** Text of a comma-separated list, or null for an empty one. */
export const listOf = (s: string): string[] | null => {
  const xs = s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  return xs.length ? xs : null;
};

/** A number field's value, or null when blank. */
export const numOrNull = (s: string): number | null => (s.trim() === '' ? null : Number(s));
