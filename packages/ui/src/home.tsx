import type { JSX } from 'preact';
import { Page } from './components.tsx';
import { useSessions } from './layout.tsx';
import { Link } from './router.tsx';
import { serviceNames } from './session.ts';

/** `/ui/`: who is signed in where, and the way in for a service one is not signed in to. */
export function HomePage(): JSX.Element {
  const sessions = useSessions();
  return (
    <Page title="Keyhaven console">
      <div class="panels">
        {(['secrets', 'scheduler'] as const).map((service) => {
          const session = sessions[service];
          return (
            <section key={service} class="panel">
              <h2>{serviceNames[service]}</h2>
              {session ? (
                <p>
                  Signed in as <strong>{session.displayName}</strong>
                  {session.policies?.length ? <> with policies {session.policies.join(', ')}</> : null}.
                </p>
              ) : (
                <p>
                  Not signed in. <Link href={`/ui/sign-in?service=${service}`}>Sign in</Link>
                </p>
              )}
            </section>
          );
        })}
      </div>
    </Page>
  );
}
