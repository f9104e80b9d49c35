/**
 * `POST /v1/acl/login`: validates a JWT against a JWT auth method, maps its claims, evaluates the method's
 * binding rules and mints a token with the matched roles and policies (or a management token).
 */
import { epochSeconds } from '../../lib/clock.ts';
import { parseDuration } from '../../lib/duration.ts';
import { badRequest, unauthenticated } from '../../lib/errors.ts';
import { supportedAlgorithms } from '../../lib/jwt/algorithms.ts';
import { type Claims, claimAt } from '../../lib/jwt/claims.ts';
import { describeError, type JwtKeySource } from '../../lib/jwt/keys.ts';
import { verifyJwt } from '../../lib/jwt/verify.ts';
import type { Scheduler } from '../composition/scheduler-core.ts';
import type { AclAuthMethod, AuthMethodConfig } from './auth-methods/model.ts';
import { bindClaims } from './binding-rules/bind.ts';
import { type ClaimVariables, tokenName as formatTokenName } from './interpolate.ts';
import type { TokenView } from './tokens/model.ts';

/** Names one version of an auth method: an update makes a new one, so its keys and provider are fetched again. */
export const methodVersion = (method: AclAuthMethod) =>
  `nomad-auth-method#${method.Name}#${method.ModifyIndex}#${method.Hash}`;

/** A stored duration (Go's form, e.g. `1h0m0s`) in seconds; none is 0. */
const seconds = (duration: string | undefined): number => (duration ? parseDuration(duration) : 0);

/** The keys a JWT auth method trusts, in Nomad's order: PEM keys, else a JWKS URL, else the discovered provider's. */
function keySource(config: AuthMethodConfig): JwtKeySource {
  if (config.JWTValidationPubKeys?.length) return { kind: 'pem', keys: config.JWTValidationPubKeys };
  if (config.JWKSURL) return { kind: 'jwks', sets: [{ url: config.JWKSURL, caPem: config.JWKSCACert ?? '' }] };
  return {
    kind: 'discovery',
    discoveryUrl: config.OIDCDiscoveryURL ?? '',
    caPem: config.DiscoveryCaPem?.join('\n') ?? '',
  };
}

/** The claims of a JWT valid for the method, as Nomad's validator (cap/jwt) checks it; else a 401 saying why. */
async function validate(scheduler: Scheduler, method: AclAuthMethod, jwt: string): Promise<Claims> {
  const config = method.Config;
  try {
    return await verifyJwt(
      jwt,
      { version: methodVersion(method), source: keySource(config) },
      {
        algorithms: config.SigningAlgs?.length ? config.SigningAlgs : supportedAlgorithms,
        issuers: config.BoundIssuer ?? [],
        audiences: config.BoundAudiences ?? [],
        leeways: {
          clockSkew: seconds(config.ClockSkewLeeway),
          expiration: seconds(config.ExpirationLeeway),
          notBefore: seconds(config.NotBeforeLeeway),
        },
        now: epochSeconds(scheduler.core.clock),
      },
    );
  } catch (error) {
    throw unauthenticated(`failed to validate JWT: ${describeError(error)}`);
  }
}

export function mapClaims(method: AclAuthMethod, claims: Claims): ClaimVariables {
  const out: ClaimVariables = { value: {}, list: {} };
  for (const [key, name] of Object.entries(method.Config.ClaimMappings ?? {})) {
    const value = claimAt(claims, key);
    if (value === undefined) continue;
    if (typeof value === 'object') throw badRequest(`error converting claim '${key}' to string`);
    out.value[name] = String(value);
  }
  for (const [key, name] of Object.entries(method.Config.ListClaimMappings ?? {})) {
    const value = claimAt(claims, key);
    if (value === undefined) continue;
    const items = Array.isArray(value) ? value : [value];
    out.list[name] = items.map((item) => (typeof item === 'object' ? JSON.stringify(item) : String(item)));
  }
  return out;
}

export async function login(scheduler: Scheduler, methodName: string, jwt: string): Promise<TokenView> {
  const method = await scheduler.authMethods.get(methodName);
  if (!method) throw badRequest(`auth method ${methodName} not found`);
  if (method.Type !== 'JWT') throw badRequest(`auth method ${methodName} is of type ${method.Type}; use the OIDC flow`);
  const claims = await validate(scheduler, method, jwt);
  return loginWithClaims(scheduler, method, claims);
}

/**
 * The part of a login after the identity is proven (a JWT, or an OIDC flow's ID token and UserInfo): maps the
 * claims, evaluates the method's binding rules and mints the token; 400 when nothing binds.
 */
export async function loginWithClaims(scheduler: Scheduler, method: AclAuthMethod, claims: Claims): Promise<TokenView> {
  const variables = mapClaims(method, claims);
  const bound = await bindClaims(scheduler, method, variables);
  if (bound.failure) throw bound.failure;
  const management = bound.Management;
  if (!management && bound.Roles.length === 0 && bound.Policies.length === 0)
    throw badRequest('no role or policy bindings matched');
  const tokenName = formatTokenName(method.TokenNameFormat, variables, method);
  const ttl = seconds(method.MaxTokenTTL);
  return scheduler.tokens.mint(
    {
      Name: tokenName,
      Type: management ? 'management' : 'client',
      Policies: management ? [] : bound.Policies,
      Roles: management ? [] : bound.Roles.map(({ ID }) => ({ ID })),
      Global: method.TokenLocality === 'global',
      ...(ttl > 0 ? { ExpirationTTL: ttl } : {}),
    },
    { anyExpiration: true, loginMethod: method.Name },
  );
}
