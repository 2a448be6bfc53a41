// The login form: takes an API token, checks it against the API
// (GET /v1/acl/token/self) and keeps it in this tab's session storage.

import { useState } from 'preact/hooks';
import { api, ApiError, saveToken, type Caller } from '../api';

export function Login({ onLogin, reason }: { onLogin: (who: Caller) => void; reason?: string }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState(reason ?? '');
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    saveToken(token.trim());
    try {
      onLogin(await api.self());
    } catch (err) {
      saveToken('');
      setError(err instanceof ApiError && err.status === 401 ? 'That token is not known to this cluster.' : (err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="login">
      <h1>Berth</h1>
      <form onSubmit={(e) => void submit(e)} class="card">
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="off"
          required
          value={token}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)}
          aria-describedby="token-help"
        />
        <p id="token-help" class="hint">
          A management or read-only token (<code>BERTH_TOKEN</code>; a dev agent prints one). It is kept in this tab only and sent to this
          agent's API.
        </p>
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" disabled={busy}>
          {busy ? 'Checking…' : 'Log in'}
        </button>
      </form>
    </main>
  );
}
