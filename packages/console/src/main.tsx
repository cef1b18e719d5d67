import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode, useEffect, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import 'uplot/dist/uPlot.min.css';
import './console.css';
import { ApiError, session, type Session } from './api';
import { Link, Router, useNav } from './router';
import { Account } from './pages/Account';
import { Accounts } from './pages/Accounts';
import { Channels } from './pages/Channels';
import { CustomerHome, CustomerTask } from './pages/Customer';
import { Overview } from './pages/Overview';
import { Pricing } from './pages/Pricing';
import { SignIn } from './pages/SignIn';
import { TaskPage, Tasks } from './pages/Tasks';

const queries = new QueryClient({
  defaultOptions: {
    // an answer in words (4xx) is final: retrying it would only repeat the words
    queries: { retry: (n, err) => !(err instanceof ApiError && err.status >= 400 && err.status < 500) && n < 2, staleTime: 5_000 },
  },
});

function OperatorPage({ path }: { path: string }) {
  const [head, id] = path.split('/');
  switch (head) {
    case '':
      return <Overview />;
    case 'accounts':
      return id ? <Account id={id} /> : <Accounts />;
    case 'channels':
      return <Channels />;
    case 'pricing':
      return <Pricing />;
    case 'tasks':
      return id ? <TaskPage id={id} /> : <Tasks />;
    default:
      return <NotFound />;
  }
}

function CustomerPage({ path }: { path: string }) {
  const [head, id] = path.split('/');
  if (head === '') return <CustomerHome />;
  if (head === 'tasks' && id) return <CustomerTask id={id} />;
  return <NotFound />;
}

function NotFound() {
  return (
    <>
      <h1>Not found</h1>
      <p>
        No such page. <Link to="">Home</Link>
      </p>
    </>
  );
}

function Shell({ who, onSignOut }: { who: Session; onSignOut: () => void }) {
  const { path } = useNav();
  // a page change moves focus to the main region, so a keyboard or screen reader user starts there; the first page
  // keeps the browser's start (the first Tab reaches "Skip to content")
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    document.getElementById('main')?.focus();
  }, [path]);
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header>
        <nav aria-label="Console">
          <strong className="brand">Gateway console</strong>
          {who.role === 'operator' ? (
            <>
              <Link to="">Overview</Link>
              <Link to="accounts">Accounts</Link>
              <Link to="channels">Channels</Link>
              <Link to="pricing">Prices and groups</Link>
              <Link to="tasks">Tasks</Link>
              <a href="/admin/queues">Queues</a>
              <a href="/docs">API docs</a>
            </>
          ) : (
            <>
              <Link to="">Account</Link>
              <a href="/playground/">Playground</a>
              <a href="/docs">API docs</a>
            </>
          )}
          <button type="button" onClick={onSignOut} className="signout">
            Sign out
          </button>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        {who.role === 'operator' ? <OperatorPage path={path} /> : <CustomerPage path={path} />}
      </main>
    </>
  );
}

function App() {
  const [who, setWho] = useState<Session | null>(() => session.read());
  const { go } = useNav();
  useEffect(() => {
    document.body.dataset.ready = 'true';
  }, []);
  // signing in or out starts on the home page (the other role may have no page at the current path)
  if (!who)
    return (
      <SignIn
        onSignedIn={() => {
          go('');
          setWho(session.read());
        }}
      />
    );
  return (
    <Shell
      who={who}
      onSignOut={() => {
        session.clear();
        queries.clear();
        go('');
        setWho(null);
      }}
    />
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queries}>
      <Router>
        <App />
      </Router>
    </QueryClientProvider>
  </StrictMode>,
);
