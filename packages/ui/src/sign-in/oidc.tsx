import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, scheduler, secrets } from '../api.ts';
import { ErrorBox, Field, useAction } from '../components.tsx';
import type { Service } from '../session.ts';
import { MethodPicker } from './method-picker.tsx';
import {
  consoleAddress,
  randomNonce,
  safeNext,
  savePending,
  schedulerCallbackPath,
  secretsCallbackPath,
} from './pending.ts';

/**
 * OIDC sign-in by redirect, as Nomad's UI does: the service builds the provider's authorization URL for the console's
 * callback page, the tab goes to the provider, and the callback page (`callback.tsx`) finishes the sign-in. The
 * redirect URI must be one the role (secrets: `allowed_redirect_uris`) or method (scheduler: `AllowedRedirectURIs`)
 * allows; when it is not, the service's refusal is shown as it worded it.
 */
export function OidcSignIn({ service }: { service: Service; onSignedIn: () => void }): JSX.Element {
  const [method, setMethod] = useState('');
  const [role, setRole] = useState('');
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const clientNonce = randomNonce();
      const next = safeNext(new URLSearchParams(location.search).get('next'));
      const name = method.trim().replace(/^\/+|\/+$/g, '');
      let authUrl: string;
      let redirectUri: string;
      if (service === 'secrets') {
        redirectUri = consoleAddress(secretsCallbackPath(name));
        const answer = await secrets<{ data?: { auth_url?: string } }>(
          'POST',
          api`auth/${name}/oidc/auth_url`,
          { ...(role.trim() ? { role: role.trim() } : {}), redirect_uri: redirectUri, client_nonce: clientNonce },
          { token: null },
        );
        authUrl = answer?.data?.auth_url ?? '';
      } else {
        redirectUri = consoleAddress(schedulerCallbackPath);
        const answer = await scheduler<{ AuthURL?: string }>(
          'POST',
          api`acl/oidc/auth-url`,
          { AuthMethodName: name, RedirectURI: redirectUri, ClientNonce: clientNonce },
          { token: null },
        );
        authUrl = answer?.AuthURL ?? '';
      }
      // The secrets service answers an empty URL (as Vault does) when the role does not allow the redirect URI.
      if (!authUrl) {
        throw new Error(
          `the service gave no authorization URL: the role must list ${redirectUri} in its allowed_redirect_uris (or the provider could not be reached)`,
        );
      }
      const provider = providerUrl(authUrl);
      const state = provider.searchParams.get('state') ?? '';
      if (!state)
        throw new Error(
          'the authorization URL the service answered carries no state; the sign-in cannot be checked when it returns',
        );
      savePending({ service, method: name, role: role.trim(), state, clientNonce, redirectUri, next });
      location.assign(provider.href);
    });
  };
  return (
    <form onSubmit={submit} aria-label={`Sign in to the ${service} service with OIDC`}>
      <MethodPicker service={service} kind="OIDC" value={method} onChange={setMethod} />
      {service === 'secrets' ? (
        <Field
          label="Role"
          value={role}
          onInput={setRole}
          name="secrets-oidc-role"
          hint="Empty: the mount's default role."
        />
      ) : null}
      <ErrorBox error={action.error} />
      <button type="submit" disabled={action.busy || !method.trim()}>
        Sign in with OIDC
      </button>
    </form>
  );
}

/** The provider's address from the service, refused unless it is an http(s) URL (never a `javascript:` one). */
function providerUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error('the service answered no authorization URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new Error(`the service answered an authorization URL that is not http(s): ${url.protocol}`);
  return url;
}
