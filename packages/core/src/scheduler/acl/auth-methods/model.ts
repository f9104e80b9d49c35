/** An ACL auth method: how a JWT or an OIDC login is verified and what its token gets (Nomad's `ACLAuthMethod`). */
import * as z from 'zod/mini';
import { formatDuration } from '../../../lib/duration.ts';
import { badRequest } from '../../../lib/errors.ts';
import type { PendingEvent } from '../../state.ts';
import { wholeSeconds } from '../durations.ts';
import { authMethodNameParameter, shown, validAuthMethodName } from '../identifiers.ts';

export interface AuthMethodConfig {
  JWTValidationPubKeys?: string[];
  JWKSURL?: string;
  JWKSCACert?: string;
  OIDCDiscoveryURL?: string;
  OIDCClientID?: string;
  OIDCClientSecret?: string;
  OIDCScopes?: string[];
  AllowedRedirectURIs?: string[];
  DiscoveryCaPem?: string[];
  SigningAlgs?: string[];
  BoundAudiences?: string[];
  BoundIssuer?: string[];
  ExpirationLeeway?: string;
  NotBeforeLeeway?: string;
  ClockSkewLeeway?: string;
  ClaimMappings?: Record<string, string>;
  ListClaimMappings?: Record<string, string>;
  /** Logs the claims of an OIDC login (never the tokens). */
  VerboseOIDCLogging?: boolean;
}

export interface AclAuthMethod {
  Name: string;
  Type: 'JWT' | 'OIDC';
  TokenLocality: 'local' | 'global';
  TokenNameFormat: string;
  MaxTokenTTL: string;
  Default: boolean;
  Config: AuthMethodConfig;
  Hash: string;
  CreateTime: string;
  ModifyTime: string;
  CreateIndex: number;
  ModifyIndex: number;
}

// biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's own interpolation syntax, not a JS template
const defaultTokenNameFormat = '${auth_method_type}-${auth_method_name}';
/** Go durations as Nomad's auth method fields take them (`1h`, `90s`, nanoseconds as a number), in whole seconds. */
const goDuration = z.pipe(
  z.union([z.string(), z.number()]),
  z.transform((value, ctx) => (value === '' ? 0 : wholeSeconds(value, ctx))),
);

const stringList = z.nullish(z.array(z.string()));
const configSchema = z.object({
  JWTValidationPubKeys: stringList.check(
    z.describe('PEM-encoded public keys that verify a JWT login (one key source of JWT methods).'),
  ),
  JWKSURL: z
    .nullish(z.string())
    .check(z.describe('The JWKS URL whose keys verify a JWT login (one key source of JWT methods).')),
  JWKSCACert: z.nullish(z.string()).check(z.describe('A PEM CA certificate that the JWKS URL is verified with.')),
  OIDCDiscoveryURL: z
    .nullish(z.string())
    .check(
      z.describe(
        "The OIDC provider's issuer URL, whose discovery document is read (OIDC methods; a key source of JWT methods).",
      ),
    ),
  OIDCClientID: z.nullish(z.string()).check(z.describe('The OAuth client ID of this service at the OIDC provider.')),
  OIDCClientSecret: z.nullish(z.string()).check(z.describe('The OAuth client secret; stored sealed and never shown.')),
  OIDCScopes: stringList.check(z.describe('Scopes requested besides `openid`.')),
  AllowedRedirectURIs: stringList.check(z.describe('The redirect URIs an OIDC login may name.')),
  DiscoveryCaPem: stringList.check(z.describe('PEM CA certificates that the OIDC provider is verified with.')),
  SigningAlgs: stringList.check(z.describe('The JWS algorithms a token may be signed with (default RS256).')),
  BoundAudiences: stringList.check(z.describe('The audiences a token must name one of (`aud`).')),
  BoundIssuer: z
    .pipe(
      z.nullish(z.union([z.string(), z.array(z.string())])),
      z.transform((value) => (typeof value === 'string' ? (value ? [value] : []) : value)),
    )
    .check(z.describe('The issuers a JWT may come from (`iss`).')),
  ExpirationLeeway: z.nullish(goDuration).check(z.describe('Leeway on the `exp` claim: a duration such as `30s`.')),
  NotBeforeLeeway: z.nullish(goDuration).check(z.describe('Leeway on the `nbf` claim: a duration such as `30s`.')),
  ClockSkewLeeway: z
    .nullish(goDuration)
    .check(z.describe('Leeway for clock skew on time claims: a duration such as `30s`.')),
  ClaimMappings: z
    .nullish(z.record(z.string(), z.string()))
    .check(z.describe('Claims (names or JSON pointers) mapped to `value.<name>` variables of binding rules.')),
  ListClaimMappings: z
    .nullish(z.record(z.string(), z.string()))
    .check(z.describe('List claims mapped to `list.<name>` variables of binding-rule selectors.')),
  VerboseOIDCLogging: z.nullish(z.boolean()).check(z.describe('Logs the claims of an OIDC login (never the tokens).')),
});

export const authMethodBody = z.object({
  Name: z
    .optional(z.string())
    .check(
      z.describe(
        'The auth method name: 1 to 128 letters, digits and dashes; equal to the name in the path when updating.',
      ),
    ),
  Type: z.optional(z.string()).check(z.describe('`JWT` or `OIDC`.')),
  TokenLocality: z
    .optional(z.string())
    .check(z.describe('`local` (the default) or `global`: where the tokens of its logins are valid.')),
  TokenNameFormat: z.optional(z.string()).check(
    z.describe(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's own interpolation syntax, not a JS template
      'The name of the tokens of its logins, with `${auth_method_type}`, `${auth_method_name}` and `${value.<claim>}`.',
    ),
  ),
  MaxTokenTTL: z
    .optional(goDuration)
    .check(z.describe('How long the tokens of its logins live: a duration such as `1h`.')),
  Default: z.optional(z.boolean()).check(z.describe('Whether it is the default method of its type (one per type).')),
  Config: z.nullish(configSchema).check(z.describe('How logins are verified and their claims mapped.')),
});
export type AuthMethodBody = z.infer<typeof authMethodBody>;

export const authMethodName = authMethodNameParameter('The auth method name.');

export type AuthMethodContent = Pick<
  AclAuthMethod,
  'Name' | 'Type' | 'TokenLocality' | 'TokenNameFormat' | 'MaxTokenTTL' | 'Default' | 'Config'
>;

/** Drops empty members so a stored config only says what was set. */
export function cleanConfig(config: z.infer<typeof configSchema> | null | undefined): AuthMethodConfig {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config ?? {})) {
    if (value === null || value === undefined || value === '' || value === 0) continue;
    if (Array.isArray(value) && value.length === 0) continue;
    if (typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0) continue;
    out[key] = typeof value === 'number' ? formatDuration(value) : value;
  }
  return out as AuthMethodConfig;
}

/** The method's content from a request body, refused as Nomad would refuse it (every problem named). */
export function validateAuthMethod(body: AuthMethodBody): AuthMethodContent {
  const name = body.Name ?? '';
  const config = cleanConfig(body.Config);
  const content = {
    Name: name,
    Type: (body.Type ?? '').toUpperCase() as AclAuthMethod['Type'],
    TokenLocality: (body.TokenLocality || 'local') as AclAuthMethod['TokenLocality'],
    TokenNameFormat: body.TokenNameFormat || defaultTokenNameFormat,
    MaxTokenTTL: formatDuration(body.MaxTokenTTL ?? 0),
    Default: body.Default ?? false,
    Config: config,
  };
  const problems: string[] = [];
  if (!validAuthMethodName.test(name)) problems.push(`invalid name '${shown(name)}'`);
  if (content.Type !== 'JWT' && content.Type !== 'OIDC')
    problems.push(`invalid token type '${shown(body.Type ?? '')}'`);
  if (content.TokenLocality !== 'local' && content.TokenLocality !== 'global')
    problems.push(`invalid token locality '${shown(content.TokenLocality)}'`);
  if (!((body.MaxTokenTTL ?? 0) > 0)) problems.push('missing max token TTL');
  if (content.Type === 'JWT') {
    const sources = [config.JWTValidationPubKeys, config.JWKSURL, config.OIDCDiscoveryURL].filter(
      (value) => value !== undefined,
    );
    if (sources.length !== 1)
      problems.push('exactly one of JWTValidationPubKeys, JWKSURL, or OIDCDiscoveryURL must be set for type JWT');
  }
  if (content.Type === 'OIDC') {
    if (!config.OIDCDiscoveryURL) problems.push('missing OIDC discovery URL');
    if (!config.OIDCClientID) problems.push('missing OIDC client ID');
    if (!config.OIDCClientSecret) problems.push('missing OIDC client secret');
  }
  for (const [label, url] of [
    ['JWKSURL', config.JWKSURL],
    ['OIDCDiscoveryURL', config.OIDCDiscoveryURL],
  ] as const) {
    if (url && !URL.canParse(url)) problems.push(`${label} is not a URL`);
  }
  if (problems.length > 0) throw badRequest(`ACL auth method validation failed: ${problems.join('; ')}`);
  return content;
}

export const pickContent = (method: AclAuthMethod): AuthMethodContent => ({
  Name: method.Name,
  Type: method.Type,
  TokenLocality: method.TokenLocality,
  TokenNameFormat: method.TokenNameFormat,
  MaxTokenTTL: method.MaxTokenTTL,
  Default: method.Default,
  Config: method.Config,
});

/** The method as anyone sees it (replies, events): the OIDC client secret is sealed at rest and never shown. */
export function withoutSecret(method: AclAuthMethod): AclAuthMethod {
  const { OIDCClientSecret: _secret, ...config } = method.Config;
  return { ...method, Config: config };
}

export function authMethodEvent(type: string, method: AclAuthMethod): PendingEvent {
  return {
    Topic: 'ACLAuthMethod',
    Type: type,
    Key: method.Name,
    Namespace: '',
    FilterKeys: null,
    Payload: { ACLAuthMethod: withoutSecret(method) },
  };
}

export const authMethodStub = (method: AclAuthMethod) => ({
  Name: method.Name,
  Type: method.Type,
  Default: method.Default,
  Hash: method.Hash,
  CreateIndex: method.CreateIndex,
  ModifyIndex: method.ModifyIndex,
});
