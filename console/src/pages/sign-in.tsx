import { useState } from 'preact/hooks';
import { ErrorNote } from '../components.tsx';

/** The key is typed (or pasted) here and kept in session storage only: never in the URL or a log. */
export function SignIn({ onSignIn }: { onSignIn: (key: string) => Promise<void> }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await onSignIn(key.trim());
    } catch (failed) {
      setError(failed);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="sign-in">
      <h1>Differently console</h1>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          required
          value={key}
          onInput={(event) => setKey((event.target as HTMLInputElement).value)}
        />
        <p class="muted">
          An organization's key shows its sandboxes, usage, audit and trust report; the bootstrap admin key
          the installation's organizations. The key stays in this tab's session storage.
        </p>
        <button type="submit" disabled={busy || key.trim() === ''}>
          Sign in
        </button>
      </form>
      <ErrorNote error={error} />
    </main>
  );
}
