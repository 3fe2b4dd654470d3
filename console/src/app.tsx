import { useEffect, useState } from 'preact/hooks';
import type { DifferentlyClient } from '../../sdk/client.ts';
import { ErrorNote } from './components.tsx';
import { AdminPage } from './pages/admin.tsx';
import { AuditPage } from './pages/audit.tsx';
import { SandboxPage } from './pages/sandbox.tsx';
import { SandboxesPage } from './pages/sandboxes.tsx';
import { SignIn } from './pages/sign-in.tsx';
import { TrustPage } from './pages/trust.tsx';
import { UsagePage } from './pages/usage.tsx';
import { clientFor, forgetKey, type Identity, identify, storedKey, storeKey } from './session.ts';

export interface Signed {
  client: DifferentlyClient;
  identity: Identity;
}

/** The page a hash names: `#/sandboxes`, `#/sandboxes/<id>`, `#/usage`, `#/audit`, `#/trust`, `#/admin`. */
function currentRoute(): string[] {
  return window.location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
}

function useRoute(): string[] {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const changed = () => setRoute(currentRoute());
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return route;
}

const tenantPages = [
  ['sandboxes', 'Sandboxes'],
  ['usage', 'Usage and budgets'],
  ['audit', 'Audit'],
  ['trust', 'Trust and pools'],
] as const;
const operatorPages = [
  ['admin', 'Organizations'],
  ['audit', 'Audit'],
  ['trust', 'Pools'],
] as const;
const orgAdminPages = [
  ['admin', 'Organization'],
  ['audit', 'Audit'],
] as const;

function pagesOf(identity: Identity): readonly (readonly [string, string])[] {
  if (identity.kind === 'operator') return operatorPages;
  return identity.kind === 'org-admin' ? orgAdminPages : tenantPages;
}

export function App() {
  const route = useRoute();
  const [signed, setSigned] = useState<Signed | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [checking, setChecking] = useState(storedKey() !== null);

  const signIn = async (key: string) => {
    const client = clientFor(key);
    const identity = await identify(client);
    storeKey(key);
    setSigned({ client, identity });
  };
  useEffect(() => {
    const key = storedKey();
    if (key === null) return;
    signIn(key)
      .catch((failed: unknown) => {
        forgetKey();
        setError(failed);
      })
      .finally(() => setChecking(false));
  }, []);

  if (checking) return <p class="muted">Signing in…</p>;
  if (signed === null)
    return (
      <>
        <ErrorNote error={error} />
        <SignIn onSignIn={signIn} />
      </>
    );
  const pages = pagesOf(signed.identity);
  const page = route[0] ?? pages[0]?.[0] ?? '';
  const signOut = () => {
    forgetKey();
    setSigned(null);
    window.location.hash = '';
  };
  return (
    <>
      <button
        type="button"
        class="skip"
        onClick={() => {
          // Not a link to #main: the hash is the page's route.
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </button>
      <header>
        <span class="brand">Differently</span>
        <nav aria-label="Console">
          <ul>
            {pages.map(([name, title]) => (
              <li key={name}>
                <a href={`#/${name}`} aria-current={page === name ? 'page' : undefined}>
                  {title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <span class="who">
          {signed.identity.kind === 'operator'
            ? 'operator (bootstrap admin key)'
            : `${signed.identity.orgId}${signed.identity.kind === 'org-admin' ? ' (admin key)' : ''}`}
        </span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Page
          page={pages.some(([name]) => name === page) ? page : ''}
          rest={route.slice(1)}
          signed={signed}
        />
      </main>
    </>
  );
}

/** The page named, among those the key's pages list (any other is refused before it loads). */
function Page({ page, rest, signed }: { page: string; rest: string[]; signed: Signed }) {
  const { identity } = signed;
  if (page === 'sandboxes')
    return rest[0] === undefined ? (
      <SandboxesPage signed={signed} />
    ) : (
      <SandboxPage signed={signed} id={rest[0]} />
    );
  if (page === 'usage') return <UsagePage signed={signed} />;
  if (page === 'audit') return <AuditPage signed={signed} />;
  if (page === 'trust') return <TrustPage signed={signed} />;
  if (page === 'admin')
    return <AdminPage signed={signed} orgId={identity.kind === 'org-admin' ? identity.orgId : rest[0]} />;
  return (
    <p role="alert" class="error">
      This page is not one this key may see.
    </p>
  );
}
