import { useState, type FormEvent } from 'react';
import { call, session, type Role } from '../api';
import { ErrorText, Field } from '../ui';

/**
 * Sign-in: an operator pastes the admin token, a customer an API key. The credential is checked with one read (the
 * channel list / the key's balance) and kept in sessionStorage only (gone with the tab).
 */
export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [role, setRole] = useState<Role>('operator');
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await call(role === 'operator' ? '/api/channels' : '/api/balance', { token: token.trim() });
      session.write({ role, token: token.trim() });
      onSignedIn();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="signin">
      <h1>Gateway console</h1>
      <form onSubmit={(e) => void submit(e)}>
        <fieldset>
          <legend>I am</legend>
          <label>
            <input type="radio" name="role" value="operator" checked={role === 'operator'} onChange={() => setRole('operator')} /> an operator (admin token)
          </label>
          <label>
            <input type="radio" name="role" value="customer" checked={role === 'customer'} onChange={() => setRole('customer')} /> a customer (API key)
          </label>
        </fieldset>
        <Field
          label={role === 'operator' ? 'Admin token' : 'API key'}
          name="token"
          type="password"
          value={token}
          onChange={setToken}
          hint="Kept for this browser tab only."
        />
        <button type="submit" disabled={busy || !token.trim()}>
          Sign in
        </button>
        <ErrorText error={error} />
      </form>
    </main>
  );
}
