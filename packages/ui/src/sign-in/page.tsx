import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { Page } from '../components.tsx';
import { useSessions } from '../layout.tsx';
import { navigate, useLocation } from '../router.tsx';
import { type Service, serviceNames } from '../session.ts';
import { signInMethods } from './methods.tsx';
import { safeNext } from './pending.ts';

/**
 * `/ui/sign-in`: a panel per service, each with its ways to sign in. `?service=` picks one (as does `service`, for
 * `/ui/settings/tokens`); `?next=` returns there.
 */
export function SignInPage({ service: fixed }: { service?: Service } = {}): JSX.Element {
  const { query } = useLocation();
  const sessions = useSessions();
  const only = fixed ?? query.get('service');
  const services = (['secrets', 'scheduler'] as const).filter((service) => !only || only === service);
  const done = () => navigate(safeNext(query.get('next')));
  return (
    <Page title="Sign in">
      <div class="panels">
        {services.map((service) => (
          <ServicePanel key={service} service={service} signedIn={Boolean(sessions[service])} onSignedIn={done} />
        ))}
      </div>
    </Page>
  );
}

function ServicePanel({
  service,
  signedIn,
  onSignedIn,
}: {
  service: Service;
  signedIn: boolean;
  onSignedIn: () => void;
}): JSX.Element {
  const methods = signInMethods[service];
  const [chosen, setChosen] = useState(methods[0]?.id ?? 'token');
  const method = methods.find((each) => each.id === chosen) ?? methods[0];
  return (
    <section class="panel" aria-labelledby={`${service}-sign-in`}>
      <h2 id={`${service}-sign-in`}>{serviceNames[service]}</h2>
      {signedIn ? <p class="note">Signed in. Signing in again replaces the token.</p> : null}
      <div role="tablist" class="tabs" aria-label={`How to sign in to the ${service} service`}>
        {methods.map((each) => (
          <button
            key={each.id}
            type="button"
            role="tab"
            id={`${service}-tab-${each.id}`}
            aria-selected={each.id === method?.id}
            onClick={() => setChosen(each.id)}
          >
            {each.label}
          </button>
        ))}
      </div>
      <div role="tabpanel" aria-labelledby={`${service}-tab-${method?.id}`}>
        {method ? <method.view service={service} onSignedIn={onSignedIn} /> : null}
      </div>
    </section>
  );
}
