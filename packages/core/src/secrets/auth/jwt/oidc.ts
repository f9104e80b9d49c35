import { decodeProtectedHeader } from 'jose';
import * as client from 'openid-client';
import * as z from 'zod';
import type { Clock } from '../../../lib/clock.ts';
import { badRequest } from '../../../lib/errors.ts';
import { ClaimError, type Claims } from '../../../lib/jwt/claims.ts';
import { describeError } from '../../../lib/jwt/keys.ts';
import { keepJwksCache, providerMetadata, relyingParty } from '../../../lib/jwt/provider.ts';
import { checkExpectedClaims } from '../../../lib/jwt/verify.ts';
import { path, type Reply, type Request } from '../../framework/backend.ts';
import { clientSecret, isOidcConfigured, type JwtConfig, loadConfig } from './config.ts';
import { providerOf } from './keys.ts';
import { finishLogin, requireAllowedAddress } from './login-result.ts';
import { consumeState, type PendingFlow, readState, saveState } from './oidc-state.ts';
import { type JwtRole, loadRole, roleName } from './roles.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/** Vault's prefixes, which its UI and CLI look for in OIDC errors. */
const loginFailed = 'Vault login failed.';

const authUrlFields = z.object({
  role: typeString
    .pipe(z.string())
    .optional()
    .describe('The role to issue an OIDC authorization URL against. Defaults to the configured default_role.'),
  redirect_uri: typeString
    .pipe(z.string())
    .optional()
    .describe(
      "The OAuth redirect_uri to use in the authorization URL; it must be one of the role's allowed_redirect_uris.",
    ),
  client_nonce: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'Optional client-provided nonce that must match the client_nonce value provided during a subsequent request to the callback API.',
    ),
});

const callbackFields = z.object({
  state: typeString
    .pipe(z.string())
    .optional()
    .describe('Opaque state ID that is part of the authorization URL and is returned by the provider.'),
  code: typeString
    .pipe(z.string())
    .optional()
    .describe('The authorization code returned by the provider (the code flow).'),
  id_token: typeString
    .pipe(z.string())
    .optional()
    .describe('The ID token returned by the provider (the implicit flow, posted with form_post).'),
  client_nonce: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'Optional client-provided nonce that must match the client_nonce value provided during the prior request to the auth_url API.',
    ),
  nonce: typeString
    .pipe(z.string())
    .optional()
    .describe('The nonce of the authorization request, when the client passes it back.'),
  iss: typeString
    .pipe(z.string())
    .optional()
    .describe('The issuer of the authorization response (RFC 9207), when the provider sends one.'),
  error: typeString
    .pipe(z.string())
    .optional()
    .describe('The error code the provider answered with instead of a code or ID token.'),
  error_description: typeString.pipe(z.string()).optional().describe("The provider's description of that error."),
});

type CallbackInput = z.output<typeof callbackFields>;

/** `auth/<mount>/oidc/auth_url` and `auth/<mount>/oidc/callback` (GET for `query`, POST for `form_post`). */
export const oidcPaths = [
  path({
    pattern: 'oidc/auth_url',
    fields: authUrlFields,
    unauthenticated: true,
    summaries: { update: 'Obtain an authorization URL from the OIDC provider, to start an OIDC login.' },
    operations: { update: (request) => authUrl(request) },
  }),
  path({
    pattern: 'oidc/callback',
    fields: callbackFields,
    unauthenticated: true,
    summaries: {
      read: "Exchange an authorization code (the 'query' response mode) for an OIDC ID token, and log in with it.",
      update: "Receive the provider's response posted with the 'form_post' response mode, and log in with it.",
    },
    operations: { read: (request) => callback(request), update: (request) => callback(request) },
  }),
];

async function authUrl(request: Request<z.output<typeof authUrlFields>>): Promise<Reply> {
  const config = await loadConfig(request);
  if (!config) throw badRequest('could not load configuration');
  if (!isOidcConfigured(config)) throw badRequest('OIDC login is not configured for this mount');
  const name = request.data.role || config.default_role;
  if (!name) throw badRequest("missing role: give 'role' or set 'default_role' in the config");
  const redirectUri = request.data.redirect_uri ?? '';
  if (!redirectUri) throw badRequest('missing redirect_uri');
  const role = await loadRole(request, roleName(name));
  if (!role) throw badRequest(`role "${name}" could not be found`);

  // As in Vault, a disallowed redirect or an unreachable provider gives an empty URL, not a reason.
  const empty = { data: { auth_url: '' } };
  if (!validRedirect(redirectUri, role.allowed_redirect_uris)) {
    request.system.log.info('oidc auth_url: redirect_uri not allowed by the role', {
      role: roleName(name),
      redirectUri,
    });
    return empty;
  }
  const secret = clientSecret(request.storage, config);
  let server: client.ServerMetadata;
  try {
    server = await providerMetadata(config.version, providerOf(config));
  } catch (error) {
    request.system.log.error('oidc auth_url: provider discovery failed', { error: describeError(error) });
    return empty;
  }
  const rp = mountRelyingParty(config, server, secret, request.system.clock);
  const implicit = config.oidc_response_types.includes('id_token');
  const state = client.randomState();
  const nonce = client.randomNonce();
  const codeVerifier = implicit ? '' : client.randomPKCECodeVerifier();
  const parameters: Record<string, string> = {
    redirect_uri: redirectUri,
    scope: [...new Set(['openid', ...role.oidc_scopes])].join(' '),
    response_type: implicit ? 'id_token' : 'code',
    state,
    nonce,
  };
  if (config.oidc_response_mode === 'form_post') parameters.response_mode = 'form_post';
  if (!implicit)
    Object.assign(parameters, {
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
  if (role.max_age > 0) parameters.max_age = String(role.max_age);
  const url = client.buildAuthorizationUrl(rp, parameters);
  await saveState(request, state, {
    role: roleName(name),
    redirect_uri: redirectUri,
    nonce,
    code_verifier: codeVerifier,
    client_nonce: request.data.client_nonce ?? '',
    max_age: role.max_age,
  });
  return { data: { auth_url: url.href } };
}

async function callback(request: Request<CallbackInput>): Promise<Reply> {
  const config = await loadConfig(request);
  if (!config) throw badRequest(`${loginFailed} Could not load configuration.`);
  const input = request.data;
  const flow = await readState(request, input.state ?? '');
  if (!flow) throw badRequest(`${loginFailed} Expired or missing OAuth state.`);
  // Checked before the state is taken: a caller who knows only the state cannot use up someone else's sign-in.
  if (flow.client_nonce && input.client_nonce !== flow.client_nonce) throw badRequest('invalid client_nonce');
  if (input.nonce && input.nonce !== flow.nonce)
    throw badRequest(`${loginFailed} The nonce does not match the one of the authorization request.`);
  if (!(await consumeState(request, input.state ?? '', flow)))
    throw badRequest(`${loginFailed} Expired or missing OAuth state.`);
  const role = await loadRole(request, flow.role);
  if (!role) throw badRequest(`${loginFailed} Role could not be found.`);
  requireAllowedAddress(role, request.clientIp);
  if (input.error) {
    throw badRequest(
      `${loginFailed} The provider answered with an error: ${input.error}${input.error_description ? ` (${input.error_description})` : ''}.`,
    );
  }

  const secret = clientSecret(request.storage, config);
  let server: client.ServerMetadata;
  try {
    server = await providerMetadata(config.version, providerOf(config));
  } catch (error) {
    throw badRequest(`${loginFailed} No response from provider: ${describeError(error)}.`);
  }
  const rp = mountRelyingParty(config, server, secret, request.system.clock);
  const claims = await providerClaims(request, config, role, rp, server, flow, input);
  keepJwksCache(config.version, rp);
  try {
    return await finishLogin(request, role, flow.role, claims);
  } catch (error) {
    if (error instanceof ClaimError) throw badRequest(error.message);
    throw error;
  }
}

/** The code exchange (or the implicit ID token), validated by openid-client, then merged with UserInfo. */
async function providerClaims(
  request: Request,
  config: JwtConfig,
  role: JwtRole,
  rp: client.Configuration,
  server: client.ServerMetadata,
  flow: PendingFlow,
  input: CallbackInput,
): Promise<Claims> {
  const response = new URL(flow.redirect_uri);
  const checks = {
    expectedState: input.state ?? '',
    expectedNonce: flow.nonce,
    ...(flow.max_age > 0 ? { maxAge: flow.max_age } : {}),
  };
  let idToken: string;
  let claims: Claims;
  let accessToken = '';
  if (config.oidc_response_types.includes('id_token')) {
    if (!input.id_token) throw badRequest(`${loginFailed} No code or id_token received.`);
    response.hash = new URLSearchParams(
      definedOnly({ id_token: input.id_token, state: input.state, iss: input.iss }),
    ).toString();
    try {
      claims = { ...(await client.implicitAuthentication(rp, response, flow.nonce, checks)) };
    } catch (error) {
      throw badRequest(`Token verification failed. ${describeError(error)}`);
    }
    idToken = input.id_token;
  } else {
    if (!input.code) throw badRequest(`${loginFailed} No code or id_token received.`);
    for (const [name, value] of Object.entries(definedOnly({ code: input.code, state: input.state, iss: input.iss })))
      response.searchParams.set(name, value);
    try {
      const tokens = await client.authorizationCodeGrant(rp, response, {
        ...checks,
        pkceCodeVerifier: flow.code_verifier,
        idTokenExpected: true,
      });
      claims = { ...tokens.claims() };
      idToken = tokens.id_token ?? '';
      accessToken = tokens.access_token;
    } catch (error) {
      throw badRequest(`${loginFailed} Error exchanging oidc code: ${JSON.stringify(describeError(error))}.`);
    }
  }
  const algs = config.jwt_supported_algs.length > 0 ? config.jwt_supported_algs : ['RS256'];
  const alg = decodeProtectedHeader(idToken).alg;
  if (!alg || !algs.includes(alg))
    throw badRequest(
      `Token verification failed. The ID token is signed with ${alg}, which 'jwt_supported_algs' does not allow.`,
    );
  if (role.verbose_oidc_logging) {
    // Claims only, never the token itself: the signature would let a reader replay it.
    request.system.log.info('oidc provider response', { claims: JSON.stringify(claims) });
  }
  delete claims.nonce;
  try {
    checkExpectedClaims(claims, { subject: role.bound_subject, audiences: role.bound_audiences });
  } catch (error) {
    if (error instanceof ClaimError) throw badRequest(error.message);
    throw error;
  }
  if (accessToken && server.userinfo_endpoint) {
    try {
      Object.assign(claims, await client.fetchUserInfo(rp, accessToken, String(claims.sub)));
    } catch (error) {
      request.system.log.info('oidc: reading the userinfo endpoint failed; continuing with the ID token claims', {
        error: describeError(error),
      });
    }
  }
  return claims;
}

/** The relying party for one request, as the mount's config describes the client. */
function mountRelyingParty(
  config: JwtConfig,
  server: client.ServerMetadata,
  secret: string,
  clock: Clock,
): client.Configuration {
  return relyingParty(
    config.version,
    server,
    {
      ...providerOf(config),
      clientId: config.oidc_client_id,
      clientSecret: secret,
      algorithms: config.jwt_supported_algs,
      idTokenResponse: config.oidc_response_types.includes('id_token'),
    },
    clock,
  );
}

/**
 * Vault's redirect rule (RFC 8252 §7.3): a loopback redirect (`localhost`, `127.0.0.1`, `[::1]`) matches an
 * allowed one on any port; anything else must be listed exactly.
 */
export function validRedirect(uri: string, allowed: string[]): boolean {
  let input: URL;
  try {
    input = new URL(uri);
  } catch {
    return false;
  }
  if (!['localhost', '127.0.0.1', '[::1]'].includes(input.hostname)) return allowed.includes(uri);
  input.port = '';
  return allowed.some((candidate) => {
    try {
      const url = new URL(candidate);
      url.port = '';
      return url.href === input.href;
    } catch {
      return false;
    }
  });
}

function definedOnly(values: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
  );
}
