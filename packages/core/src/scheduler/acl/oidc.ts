/**
 * Nomad's OIDC browser flow for auth methods of type OIDC:
 * - `POST /v1/acl/oidc/auth-url` (`AuthMethodName`, `RedirectURI`, `ClientNonce`) answers `{"AuthURL": …}`, the
 *   provider's authorization URL, and keeps the flow's state, nonce and PKCE verifier in the table for ten minutes;
 * - `POST /v1/acl/oidc/complete-auth` (`AuthMethodName`, `ClientNonce`, `State`, `Code`, `RedirectURI`) takes that
 *   state out (once), exchanges the code, validates the ID token, maps the claims and binds as `/v1/acl/login` does.
 */
import * as client from 'openid-client';
import * as z from 'zod/mini';
import { epochSeconds } from '../../lib/clock.ts';
import { badRequest } from '../../lib/errors.ts';
import type { Claims } from '../../lib/jwt/claims.ts';
import { describeError } from '../../lib/jwt/keys.ts';
import { keepJwksCache, providerMetadata, relyingParty } from '../../lib/jwt/provider.ts';
import { checkExpectedClaims } from '../../lib/jwt/verify.ts';
import { itemKind } from '../../storage/item-mac.ts';
import { ConditionFailed } from '../../storage/store.ts';
import { OIDC_STATE_PK } from '../keys.ts';
import type { Scheduler } from '../composition/scheduler-core.ts';
import type { AclAuthMethod } from './auth-methods/model.ts';
import { requireAuthMethodName } from './identifiers.ts';
import { loginWithClaims, methodVersion } from './login.ts';

/** How long a flow may take between `auth-url` and `complete-auth`. */
export const oidcStateSeconds = 600;

const authUrlBody = z.object({
  AuthMethodName: z.optional(z.string()),
  RedirectURI: z.optional(z.string()),
  ClientNonce: z.optional(z.string()),
});

const completeAuthBody = z.object({
  AuthMethodName: z.optional(z.string()),
  ClientNonce: z.optional(z.string()),
  State: z.optional(z.string()),
  Code: z.optional(z.string()),
  RedirectURI: z.optional(z.string()),
  /** The `iss` of the authorization response (RFC 9207), when the client passes it on; Nomad's clients do not. */
  Iss: z.optional(z.string()),
});

/** One flow in progress, as stored: the PKCE verifier sealed, the client nonce only hashed. */
interface StoredFlow {
  AuthMethod: string;
  RedirectURI: string;
  Nonce: string;
  SealedCodeVerifier: string;
  ClientNonceHash: string;
}

const verifierContext = (state: string) => `scheduler/oidc-state/${state}`;

/**
 * A flow's item is authenticated (its expiry included): the auth method, redirect and nonces a completion trusts
 * cannot be written or edited by a table writer.
 */
export const oidcStateKind = itemKind('scheduler-oidc-state', [], { epoch: 'bootstrap' });

const providerOf = (method: AclAuthMethod) => ({
  discoveryUrl: method.Config.OIDCDiscoveryURL ?? '',
  caPem: method.Config.DiscoveryCaPem?.join('\n') ?? '',
});

/** A relying-party Configuration per request, so its "now" is the core's clock. */
async function methodRelyingParty(scheduler: Scheduler, method: AclAuthMethod): Promise<client.Configuration> {
  let server: client.ServerMetadata;
  try {
    server = await providerMetadata(methodVersion(method), providerOf(method));
  } catch (error) {
    throw badRequest(`failed to discover the OIDC provider: ${describeError(error)}`);
  }
  const config = method.Config;
  return relyingParty(
    methodVersion(method),
    server,
    {
      ...providerOf(method),
      clientId: config.OIDCClientID ?? '',
      clientSecret: config.OIDCClientSecret ?? '',
      algorithms: config.SigningAlgs ?? [],
    },
    scheduler.core.clock,
  );
}

async function oidcMethod(scheduler: Scheduler, name: string | undefined): Promise<AclAuthMethod> {
  if (!name) throw badRequest('missing auth method name');
  const method = await scheduler.authMethods.get(requireAuthMethodName(name, 'AuthMethodName'));
  if (!method) throw badRequest(`auth method ${name} not found`);
  if (method.Type !== 'OIDC') throw badRequest(`auth method ${name} is of type ${method.Type}, not OIDC`);
  return method;
}

function requireAllowedRedirect(method: AclAuthMethod, redirectUri: string | undefined): string {
  if (!redirectUri) throw badRequest('missing redirect URI');
  if (!(method.Config.AllowedRedirectURIs ?? []).includes(redirectUri)) {
    throw badRequest(`redirect URI ${redirectUri} is not allowed by auth method ${method.Name}`);
  }
  return redirectUri;
}

export async function oidcAuthUrl(scheduler: Scheduler, body: z.infer<typeof authUrlBody>): Promise<string> {
  const method = await oidcMethod(scheduler, body.AuthMethodName);
  const redirectUri = requireAllowedRedirect(method, body.RedirectURI);
  if (!body.ClientNonce) throw badRequest('missing client nonce');
  const rp = await methodRelyingParty(scheduler, method);
  const state = client.randomState();
  const nonce = client.randomNonce();
  const codeVerifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(rp, {
    redirect_uri: redirectUri,
    scope: [...new Set(['openid', ...(method.Config.OIDCScopes ?? [])])].join(' '),
    response_type: 'code',
    state,
    nonce,
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
  });
  const { keyring, store, clock } = scheduler.core;
  const flow: StoredFlow = {
    AuthMethod: method.Name,
    RedirectURI: redirectUri,
    Nonce: nonce,
    SealedCodeVerifier: keyring.seal(codeVerifier, verifierContext(state)),
    ClientNonceHash: keyring.hash(`scheduler-oidc:${body.ClientNonce}`),
  };
  await store.put(
    store.signed(oidcStateKind, {
      pk: OIDC_STATE_PK,
      sk: state,
      ...flow,
      expiresAt: epochSeconds(clock) + oidcStateSeconds,
    }),
    { when: { absent: true } },
  );
  return url.href;
}

/**
 * The flow of a state, without taking it (a completion checks the client nonce first, so someone who learnt only the
 * state cannot spoil a sign-in in progress). Expired state (DynamoDB's TTL deletes late) and state that fails its MAC
 * count as missing.
 */
async function readFlow(scheduler: Scheduler, state: string): Promise<(StoredFlow & { mac: string }) | undefined> {
  // A state this service issued is short; a longer one (in bytes: DynamoDB's sort key limit is 1024) is no flow's.
  if (Buffer.byteLength(state) > 512) return undefined;
  const item = await scheduler.core.store.getVerified(oidcStateKind, OIDC_STATE_PK, state);
  if (!item || (item.expiresAt as number) <= epochSeconds(scheduler.core.clock)) return undefined;
  return item as unknown as StoredFlow & { mac: string };
}

/** Takes the flow out with a conditional delete of exactly the item read: of two completions only one gets it. */
async function consumeFlow(scheduler: Scheduler, state: string, flow: { mac: string }): Promise<boolean> {
  try {
    await scheduler.core.store.delete({ pk: OIDC_STATE_PK, sk: state }, { when: { equals: { mac: flow.mac } } });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

export async function oidcCompleteAuth(scheduler: Scheduler, body: z.infer<typeof completeAuthBody>) {
  if (!body.State) throw badRequest('missing state');
  if (!body.Code) throw badRequest('missing code');
  if (!body.ClientNonce) throw badRequest('missing client nonce');
  const method = await oidcMethod(scheduler, body.AuthMethodName);
  const stateMissing = () =>
    badRequest('OIDC state not found or expired: it is used once and lasts 10 minutes; start the login again');
  const flow = await readFlow(scheduler, body.State);
  if (!flow) throw stateMissing();
  const { keyring, log } = scheduler.core;
  // Every check of what the caller sent comes before the state is taken: a wrong nonce leaves the sign-in intact.
  if (flow.AuthMethod !== method.Name) throw badRequest('OIDC state was issued for another auth method');
  if (keyring.hash(`scheduler-oidc:${body.ClientNonce}`) !== flow.ClientNonceHash)
    throw badRequest('invalid client nonce');
  if (body.RedirectURI !== flow.RedirectURI)
    throw badRequest('redirect URI does not match the one of the authorization request');
  requireAllowedRedirect(method, body.RedirectURI);
  if (!(await consumeFlow(scheduler, body.State, flow))) throw stateMissing();

  const rp = await methodRelyingParty(scheduler, method);
  const callback = new URL(flow.RedirectURI);
  callback.searchParams.set('code', body.Code);
  callback.searchParams.set('state', body.State);
  // A provider that sends `iss` with its authorization response (RFC 9207) makes openid-client require it. Nomad's
  // clients do not pass it on; the state is bound to this one auth method, so the code can only go back to the
  // provider that issued it (the mix-up RFC 9207 guards against) and the discovered issuer stands in.
  const iss =
    body.Iss || (rp.serverMetadata().authorization_response_iss_parameter_supported ? rp.serverMetadata().issuer : '');
  if (iss) callback.searchParams.set('iss', iss);
  let claims: Claims;
  let accessToken: string;
  try {
    const tokens = await client.authorizationCodeGrant(rp, callback, {
      expectedState: body.State,
      expectedNonce: flow.Nonce,
      pkceCodeVerifier: keyring.open(flow.SealedCodeVerifier, verifierContext(body.State)),
      idTokenExpected: true,
    });
    claims = { ...tokens.claims() };
    accessToken = tokens.access_token;
  } catch (error) {
    throw badRequest(`failed to exchange the OIDC code: ${describeError(error)}`);
  }
  keepJwksCache(methodVersion(method), rp);
  // openid-client checked that the audience names the client; the method may bind it further.
  try {
    checkExpectedClaims(claims, { audiences: method.Config.BoundAudiences ?? [] });
  } catch (error) {
    throw badRequest(`invalid ID token: ${describeError(error)}`);
  }
  delete claims.nonce;

  // Claims the provider keeps out of the ID token come from UserInfo; the ID token wins on a conflict.
  const server = rp.serverMetadata();
  if (accessToken && server.userinfo_endpoint) {
    try {
      claims = { ...(await client.fetchUserInfo(rp, accessToken, String(claims.sub))), ...claims };
    } catch (error) {
      log.info('scheduler oidc: reading the userinfo endpoint failed; continuing with the ID token claims', {
        error: describeError(error),
      });
    }
  }
  if (method.Config.VerboseOIDCLogging) {
    // Claims only, never a token: a token in a log could be replayed.
    log.info('scheduler oidc: provider claims', { authMethod: method.Name, claims: JSON.stringify(claims) });
  }
  return loginWithClaims(scheduler, method, claims);
}
