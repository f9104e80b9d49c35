import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Link, type NavEntry, useLocation } from './router.tsx';
import { getSession, onSessionChange, type Service, serviceNames } from './session.ts';
import { signOut } from './sign-in/sign-out.ts';

/** Re-renders when a sign-in or sign-out changes a session. */
export function useSessions(): Record<Service, ReturnType<typeof getSession>> {
  const [, setTick] = useState(0);
  useEffect(() => onSessionChange(() => setTick((tick) => tick + 1)), []);
  return { secrets: getSession('secrets'), scheduler: getSession('scheduler') };
}

/** The frame of every page: the two services' menus, who is signed in, and the page. */
export function Layout({
  nav,
  children,
}: {
  nav: Record<Service, NavEntry[]>;
  children: ComponentChildren;
}): JSX.Element {
  const sessions = useSessions();
  const { path } = useLocation();
  // The one menu entry for this page: the longest whose address is the path or a folder of it.
  const current = [...nav.secrets, ...nav.scheduler]
    .map((entry) => entry.href)
    .filter((href) => path === href || path.startsWith(`${href}/`))
    .sort((a, b) => b.length - a.length)[0];
  return (
    <div class="layout">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href="/ui/" class="brand">
          Keyhaven
        </Link>
        <div class="who">
          {(['secrets', 'scheduler'] as const).map((service) => {
            const session = sessions[service];
            return session ? (
              <span key={service} class="signed-in" data-service={service}>
                {serviceNames[service]}: {session.displayName || 'token'}{' '}
                <button type="button" class="small" onClick={() => void signOut(service)}>
                  Sign out
                </button>
              </span>
            ) : (
              <Link key={service} href={`/ui/sign-in?service=${service}`}>
                Sign in to the {serviceNames[service].toLowerCase()}
              </Link>
            );
          })}
        </div>
      </header>
      <nav class="side" aria-label="Console">
        {(['secrets', 'scheduler'] as const).map((service) => (
          <div key={service} class="nav-group">
            <h2>{serviceNames[service]}</h2>
            <ul>
              {nav[service].map((entry) => (
                <li key={entry.href}>
                  <Link href={entry.href} aria-current={entry.href === current ? 'page' : undefined}>
                    {entry.label}
                  </Link>
                </li>
              ))}
            </ul>
          </div>
        ))}
      </nav>
      <main id="main">{children}</main>
    </div>
  );
}
