import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler, secrets } from '../api.ts';
import { ErrorBox, Field, useAction } from '../components.tsx';
import { type Service, type Session, setSession } from '../session.ts';

/** Asks the service about a token; a session when it is valid, the service's refusal otherwise. */
export async function sessionForToken(service: Service, token: string, createdByConsole: boolean): Promise<Session> {
  if (service === 'secrets') {
    const answer = await secrets<{ data: { display_name?: string; policies?: string[] } }>(
      'GET',
      api`auth/token/lookup-self`,
      undefined,
      { token },
    );
    return {
      token,
      createdByConsole,
      displayName: answer.data.display_name || 'token',
      policies: answer.data.policies ?? [],
    };
  }
  const answer = await scheduler<{ Name?: string; Type?: string; Policies?: string[] | null; AccessorID?: string }>(
    'GET',
    api`acl/token/self`,
    undefined,
    { token },
  );
  return {
    token,
    createdByConsole,
    displayName: answer.Name || (answer.Type === 'management' ? 'management token' : 'token'),
    policies: answer.Policies ?? [],
  };
}

/** Sign-in with a token the person pastes; it is checked against the service before it is kept. */
export function TokenSignIn({ service, onSignedIn }: { service: Service; onSignedIn: () => void }): JSX.Element {
  const [token, setToken] = useState('');
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      setSession(service, await sessionForToken(service, token.trim(), false));
      onSignedIn();
    });
  };
  return (
    <form onSubmit={submit} aria-label={`Sign in to the ${service} service with a token`}>
      <Field label="Token" type="password" value={token} onInput={setToken} required name={`${service}-token`} />
      <ErrorBox error={action.error} />
      <button type="submit" disabled={action.busy || !token.trim()}>
        Sign in
      </button>
    </form>
  );
}
