import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, scheduler, secrets, withQuery } from '../api.ts';
import { ErrorBox, Page } from '../components.tsx';
import { Link, navigate, useLocation } from '../router.tsx';
import { type Service, serviceNames, setSession } from '../session.ts';
import { clearPending, type PendingOidc, readPending, safeNext } from './pending.ts';
import { sessionForToken } from './token.tsx';

/** Why a callback is refused before the service is asked: it does not belong to a sign-in this tab started. */
export class CallbackRefused extends Error {}

/**
 * The sign-in this callback finishes, if it is the one this tab started: same service, same method, and the very
 * `state` the service put into the authorization URL. Anything else (a tampered or replayed `state`, a callback URL
 * opened in another tab or browser) is refused here, and the code is never sent.
 */
export function pendingFor(service: Service, method: string | undefined, state: string): PendingOidc {
  const pending = readPending();
  if (!pending)
    throw new CallbackRefused(
      'No OIDC sign-in was started in this tab, so this callback cannot be trusted. Start the sign-in again.',
    );
  if (pending.service !== service || (method !== undefined && pending.method !== method)) {
    throw new CallbackRefused(
      `This callback is for a different sign-in than the one started in this tab (${serviceNames[pending.service]}, ${pending.method}). Start the sign-in again.`,
    );
  }
  if (!state || state !== pending.state) {
    throw new CallbackRefused(
      'The state of this callback does not match the OIDC sign-in started in this tab: it was refused. Start the sign-in again.',
    );
  }
  return pending;
}

/** Runs a callback once per state, shows what it is doing, its refusal or the service's error. */
function CallbackPage({ service, run }: { service: Service; run: () => Promise<string> }): JSX.Element {
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    run().then(
      (next) => navigate(next, { replace: true }),
      (caught: unknown) => setError(caught),
    );
  }, []);
  return (
    <Page title={`Signing in to the ${serviceNames[service].toLowerCase()}`}>
      {error === undefined ? (
        <p class="loading">Finishing the OIDC sign-in…</p>
      ) : (
        <>
          <ErrorBox error={error} />
          <p>
            <Link href={`/ui/sign-in?service=${service}`}>Back to sign-in</Link>
          </p>
        </>
      )}
    </Page>
  );
}

/** Codes already sent from this page (a re-render must not spend one twice). */
const spent = new Set<string>();

function once(state: string): void {
  if (spent.has(state)) throw new CallbackRefused('This callback was already used.');
  spent.add(state);
}

/** A provider that answered with an error instead of a code says so in the query. */
function providerError(query: URLSearchParams): void {
  const error = query.get('error');
  if (error)
    throw new Error(
      `The provider refused the sign-in: ${error}${query.get('error_description') ? ` (${query.get('error_description')})` : ''}`,
    );
}

/** `/ui/vault/auth/:mount/oidc/callback`: the secrets service's OIDC callback page (Vault's UI path). */
export function SecretsOidcCallback({ mount }: { mount: string }): JSX.Element {
  const run = async () => {
    const query = new URLSearchParams(location.search);
    providerError(query);
    const state = query.get('state') ?? '';
    const pending = pendingFor('secrets', mount, state);
    once(state);
    try {
      // `iss` (RFC 9207) goes on when the provider sent it: a provider that sends it has it checked.
      const iss = query.get('iss');
      const params = new URLSearchParams({
        state,
        code: query.get('code') ?? '',
        client_nonce: pending.clientNonce,
        ...(iss ? { iss } : {}),
      });
      const answer = await secrets<{ auth?: { client_token?: string } }>(
        'GET',
        withQuery(api`auth/${pending.method}/oidc/callback`, Object.fromEntries(params)),
        undefined,
        { token: null },
      );
      const token = answer?.auth?.client_token;
      if (!token) throw new Error('the service finished the sign-in without a token');
      setSession('secrets', await sessionForToken('secrets', token, true));
      return safeNext(pending.next);
    } finally {
      clearPending();
    }
  };
  return <CallbackPage service="secrets" run={run} />;
}

/** The scheduler's OIDC return (`/ui/settings/tokens?code=&state=`): `acl/oidc/complete-auth`. */
function SchedulerOidcCallback(): JSX.Element {
  const run = async () => {
    const query = new URLSearchParams(location.search);
    providerError(query);
    const state = query.get('state') ?? '';
    const pending = pendingFor('scheduler', undefined, state);
    once(state);
    try {
      const answer = await scheduler<{ SecretID?: string }>(
        'POST',
        api`acl/oidc/complete-auth`,
        {
          AuthMethodName: pending.method,
          ClientNonce: pending.clientNonce,
          State: state,
          Code: query.get('code') ?? '',
          RedirectURI: pending.redirectUri,
          ...(query.get('iss') ? { Iss: query.get('iss') } : {}),
        },
        { token: null },
      );
      if (!answer?.SecretID) throw new Error('the service finished the sign-in without a token');
      setSession('scheduler', await sessionForToken('scheduler', answer.SecretID, true));
      return safeNext(pending.next);
    } finally {
      clearPending();
    }
  };
  return <CallbackPage service="scheduler" run={run} />;
}

/**
 * `/ui/settings/tokens`, Nomad's UI path: where the scheduler's OIDC provider returns (with `code` and `state`, or
 * `error`), and otherwise the scheduler's sign-in.
 */
export function SchedulerTokensPage({ signIn }: { signIn: () => JSX.Element }): JSX.Element {
  const { query } = useLocation();
  if (query.has('code') || query.has('state') || query.has('error')) return <SchedulerOidcCallback />;
  return signIn();
}
