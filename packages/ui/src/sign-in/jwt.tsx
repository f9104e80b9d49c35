import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler, secrets } from '../api.ts';
import { ErrorBox, Field, useAction } from '../components.tsx';
import { type Service, setSession } from '../session.ts';
import { MethodPicker } from './method-picker.tsx';
import { sessionForToken } from './token.tsx';

/**
 * Sign-in with a JWT the person pastes: the secrets service's `auth/<mount>/login {role, jwt}`, the scheduler's
 * `acl/login {AuthMethodName, LoginToken}`. The token the login makes is the console's own: sign-out revokes it.
 */
export function JwtSignIn({ service, onSignedIn }: { service: Service; onSignedIn: () => void }): JSX.Element {
  const [method, setMethod] = useState('');
  const [role, setRole] = useState('');
  const [jwt, setJwt] = useState('');
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const name = method.trim().replace(/^\/+|\/+$/g, '');
      let token: string;
      if (service === 'secrets') {
        const answer = await secrets<{ auth?: { client_token?: string } }>(
          'POST',
          api`auth/${name}/login`,
          { ...(role.trim() ? { role: role.trim() } : {}), jwt: jwt.trim() },
          { token: null },
        );
        token = answer?.auth?.client_token ?? '';
      } else {
        const answer = await scheduler<{ SecretID?: string }>(
          'POST',
          api`acl/login`,
          { AuthMethodName: name, LoginToken: jwt.trim() },
          { token: null },
        );
        token = answer?.SecretID ?? '';
      }
      if (!token) throw new Error('the service answered the login without a token');
      setSession(service, await sessionForToken(service, token, true));
      onSignedIn();
    });
  };
  return (
    <form onSubmit={submit} aria-label={`Sign in to the ${service} service with a JWT`}>
      <MethodPicker service={service} kind="JWT" value={method} onChange={setMethod} />
      {service === 'secrets' ? (
        <Field
          label="Role"
          value={role}
          onInput={setRole}
          name="secrets-jwt-role"
          hint="Empty: the mount's default role."
        />
      ) : null}
      <Field label="JWT" value={jwt} onInput={setJwt} multiline rows={5} required name={`${service}-jwt`} />
      <ErrorBox error={action.error} />
      <button type="submit" disabled={action.busy || !method.trim() || !jwt.trim()}>
        Sign in with the JWT
      </button>
    </form>
  );
}
