import { createContext, useCallback, useContext, useEffect, useState, type MouseEvent, type ReactNode } from 'react';

/** Every page lives under this base (the edge serves the app there; deep links fall back to index.html). */
export const BASE = '/console/';

/** The path below BASE, without a leading slash: '' is the home page, 'tasks/abc' a task. */
function current(): string {
  const p = location.pathname;
  return p.startsWith(BASE) ? decodeURIComponent(p.slice(BASE.length)) : '';
}

interface Nav {
  path: string;
  query: URLSearchParams;
  go: (to: string) => void;
}

const NavContext = createContext<Nav | null>(null);

/** History routing under /console/ (no hash): back and forward work, a reload keeps the page. */
export function Router({ children }: { children: ReactNode }) {
  const [loc, setLoc] = useState(() => ({ path: current(), search: location.search }));
  useEffect(() => {
    const onPop = () => setLoc({ path: current(), search: location.search });
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);
  const go = useCallback((to: string) => {
    history.pushState(null, '', BASE + to);
    setLoc({ path: current(), search: location.search });
    scrollTo(0, 0);
  }, []);
  return <NavContext.Provider value={{ path: loc.path, query: new URLSearchParams(loc.search), go }}>{children}</NavContext.Provider>;
}

export function useNav(): Nav {
  const nav = useContext(NavContext);
  if (!nav) throw new Error('useNav outside <Router>');
  return nav;
}

/** An in-app link: a real <a href> (open in a new tab works), a plain click stays in the app. */
export function Link({ to, children, className }: { to: string; children: ReactNode; className?: string }) {
  const { go, path } = useNav();
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    go(to);
  };
  const here = path === to || (to !== '' && path.startsWith(`${to}/`));
  return (
    <a href={BASE + to} onClick={onClick} className={className} aria-current={here ? 'page' : undefined}>
      {children}
    </a>
  );
}
