/**
 * `POST /v1/acl/login`: validates a JWT against a JWT auth method, maps its claims, evaluates the method's
 * binding rules and mints a token with the matched roles and policies (or a management token).
 */
import { createRemoteJWKSet, importJWK, importSPKI, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { Hono } from 'hono';
import * as z from 'zod';
import { selectorMatches } from '../../lib/bexpr.ts';
import { NomadError, badRequest, readBody, setIndexHeaders } from '../http/nomad.ts';
import type { Scheduler, SchedulerEnv } from '../scheduler.ts';
import type { AclAuthMethod } from './auth-methods/model.ts';
import { requireAuthMethodName } from './identifiers.ts';
import { bindNames, type ClaimVariables, tokenName as formatTokenName } from './interpolate.ts';
import type { TokenView } from './tokens/model.ts';

const loginBody = z.object({ AuthMethodName: z.string().optional(), LoginToken: z.string().optional() });

const remoteKeySets = new Map<string, JWTVerifyGetKey>();
const discovered = new Map<string, Promise<string>>();

function seconds(duration: string | undefined): number {
  if (!duration) return 0;
  let total = 0;
  for (const [, amount, unit] of duration.matchAll(/(\d+(?:\.\d+)?)(h|m|s)/g)) total += Number(amount) * ({ h: 3600, m: 60, s: 1 }[unit as 's'] ?? 0);
  return total;
}

async function keyFor(method: AclAuthMethod): Promise<Array<Parameters<typeof jwtVerify>[1]>> {
  const config = method.Config;
  if (config.JWTValidationPubKeys?.length) {
    return Promise.all(config.JWTValidationPubKeys.map((pem) => importPublicKey(pem)));
  }
  let jwksUrl = config.JWKSURL;
  if (!jwksUrl && config.OIDCDiscoveryURL) {
    const base = config.OIDCDiscoveryURL.replace(/\/$/, '');
    let pending = discovered.get(base);
    if (!pending) {
      pending = fetch(`${base}/.well-known/openid-configuration`)
        .then((response) => response.json() as Promise<{ jwks_uri?: string }>)
        .then((document) => {
          if (!document.jwks_uri) throw new Error('the discovery document has no jwks_uri');
          return document.jwks_uri;
        });
      pending.catch(() => discovered.delete(base));
      discovered.set(base, pending);
    }
    jwksUrl = await pending;
  }
  if (!jwksUrl) throw new Error('the auth method has no key source');
  let keySet = remoteKeySets.get(jwksUrl);
  if (!keySet) {
    keySet = createRemoteJWKSet(new URL(jwksUrl));
    remoteKeySets.set(jwksUrl, keySet);
  }
  return [keySet];
}

async function importPublicKey(pem: string) {
  const algorithms = ['RS256', 'ES256', 'ES384', 'PS256', 'EdDSA'];
  for (const alg of algorithms) {
    try {
      return await importSPKI(pem, alg, { extractable: false });
    } catch {
      // The PEM does not say its algorithm: try the next.
    }
  }
  return importJWK(JSON.parse(pem));
}

/** Claims selected by a mapping key: a top-level claim name, or a JSON pointer such as `/groups/admin`. */
function claim(claims: JWTPayload, key: string): unknown {
  if (!key.startsWith('/')) return claims[key];
  let current: unknown = claims;
  for (const part of key.slice(1).split('/')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return current;
}

export function mapClaims(method: AclAuthMethod, claims: JWTPayload): ClaimVariables {
  const out: ClaimVariables = { value: {}, list: {} };
  for (const [key, name] of Object.entries(method.Config.ClaimMappings ?? {})) {
    const value = claim(claims, key);
    if (value === undefined || value === null) continue;
    if (typeof value === 'object') throw badRequest(`error converting claim '${key}' to string`);
    out.value[name] = String(value);
  }
  for (const [key, name] of Object.entries(method.Config.ListClaimMappings ?? {})) {
    const value = claim(claims, key);
    if (value === undefined || value === null) continue;
    const items = Array.isArray(value) ? value : [value];
    out.list[name] = items.map((item) => (typeof item === 'object' ? JSON.stringify(item) : String(item)));
  }
  return out;
}

export async function login(scheduler: Scheduler, methodName: string, jwt: string): Promise<TokenView> {
  const method = await scheduler.authMethods.get(methodName);
  if (!method) throw badRequest(`auth method ${methodName} not found`);
  if (method.Type !== 'JWT') throw badRequest(`auth method ${methodName} is of type ${method.Type}; use the OIDC flow`);
  let claims: JWTPayload;
  try {
    const keys = await keyFor(method);
    let lastError: unknown;
    let verified: JWTPayload | undefined;
    for (const key of keys) {
      try {
        verified = (
          await jwtVerify(jwt, key as never, {
            currentDate: new Date(scheduler.core.clock.now()),
            clockTolerance: seconds(method.Config.ClockSkewLeeway) + seconds(method.Config.ExpirationLeeway),
            ...(method.Config.BoundIssuer?.length ? { issuer: method.Config.BoundIssuer } : {}),
            ...(method.Config.BoundAudiences?.length ? { audience: method.Config.BoundAudiences } : {}),
            ...(method.Config.SigningAlgs?.length ? { algorithms: method.Config.SigningAlgs } : {}),
          })
        ).payload;
        break;
      } catch (error) {
        lastError = error;
      }
    }
    if (!verified) throw lastError;
    claims = verified;
  } catch (error) {
    throw new NomadError(401, `failed to validate JWT: ${(error as Error).message}`);
  }
  return loginWithClaims(scheduler, method, claims);
}

/**
 * The part of a login after the identity is proven (a JWT, or an OIDC flow's ID token and UserInfo): maps the
 * claims, evaluates the method's binding rules and mints the token; 400 when nothing binds.
 */
export async function loginWithClaims(scheduler: Scheduler, method: AclAuthMethod, claims: JWTPayload): Promise<TokenView> {
  const variables = mapClaims(method, claims);
  const datum = { value: variables.value, list: variables.list };
  let management = false;
  const roles = new Map<string, string>();
  const policies = new Set<string>();
  for (const rule of (await scheduler.bindingRules.list()).filter((candidate) => candidate.AuthMethod === method.Name)) {
    // A selector that does not evaluate (a stored one the grammar now refuses, a missing key) is no match, as in Nomad.
    if (rule.Selector && !selectorMatches(rule.Selector, datum)) continue;
    if (rule.BindType === 'management') {
      management = true;
      continue;
    }
    for (const name of bindNames(rule.BindType, rule.BindName, variables, Object.values(method.Config.ClaimMappings ?? {}))) {
      if (rule.BindType === 'policy') policies.add(name);
      else {
        const role = await scheduler.roles.getByName(name);
        if (role) roles.set(role.ID, role.Name);
      }
    }
  }
  if (!management && roles.size === 0 && policies.size === 0) throw badRequest('no role or policy bindings matched');
  const tokenName = formatTokenName(method.TokenNameFormat, variables, method);
  const ttl = seconds(method.MaxTokenTTL);
  return scheduler.tokens.mint(
    {
      Name: tokenName,
      Type: management ? 'management' : 'client',
      Policies: management ? [] : [...policies],
      Roles: management ? [] : [...roles.keys()].map((ID) => ({ ID })),
      Global: method.TokenLocality === 'global',
      ...(ttl > 0 ? { ExpirationTTL: ttl } : {}),
    },
    { anyExpiration: true },
  );
}

export function loginRoutes(app: Hono<SchedulerEnv>): void {
  app.post('/v1/acl/login', async (c) => {
    const { scheduler } = c.var;
    const body = await readBody(c, loginBody);
    if (!body.AuthMethodName) throw badRequest('missing auth method name');
    if (!body.LoginToken) throw badRequest('missing login token');
    requireAuthMethodName(body.AuthMethodName, 'AuthMethodName');
    const token = await login(scheduler, body.AuthMethodName, body.LoginToken);
    setIndexHeaders(c, token.CreateIndex);
    return c.json(token);
  });
}
