/** ACL auth methods: `/v1/acl/auth-methods`, `/v1/acl/auth-method`, `/v1/acl/auth-method/:name`. */
import type { Context, Hono } from 'hono';
import * as z from 'zod';
import { formatDuration } from '../../lib/duration.ts';
import type { Keyring } from '../../storage/keyring.ts';
import { badRequest, blockingQuery, notFound, readBody, setIndexHeaders } from '../http/nomad.ts';
import type { SchedulerEnv } from '../scheduler.ts';
import type { PendingEvent, SchedulerState } from '../state.ts';
import type { AclBindingRules } from './binding-rules.ts';
import { contentHash, rfc3339, sameContent, withoutKeys } from './common.ts';
import { requireAuthMethodName, shown, validAuthMethodName } from './identifiers.ts';

export const AUTH_METHOD_PK = 'sched#auth-method';

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
const sealContext = (name: string) => `scheduler/auth-method/${name}`;

/** Go durations as Nomad's auth method fields take them (`1h`, `90s`, nanoseconds as a number). */
const goDuration = z.union([z.string(), z.number()]).transform((value, ctx) => {
  if (typeof value === 'number') return Math.floor(value / 1e9);
  if (value === '') return 0;
  if (!/^((\d+(\.\d+)?)(ns|us|µs|ms|s|m|h))+$/.test(value)) {
    ctx.addIssue({ code: 'custom', message: `invalid duration "${value}"` });
    return z.NEVER;
  }
  let total = 0;
  for (const [, amount, , unit] of value.matchAll(/(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) {
    total += Number(amount) * ({ ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 }[unit as 's'] ?? 0);
  }
  return Math.floor(total);
});

const stringList = z.array(z.string()).nullish();
const configSchema = z.object({
  JWTValidationPubKeys: stringList,
  JWKSURL: z.string().nullish(),
  JWKSCACert: z.string().nullish(),
  OIDCDiscoveryURL: z.string().nullish(),
  OIDCClientID: z.string().nullish(),
  OIDCClientSecret: z.string().nullish(),
  OIDCScopes: stringList,
  AllowedRedirectURIs: stringList,
  DiscoveryCaPem: stringList,
  SigningAlgs: stringList,
  BoundAudiences: stringList,
  BoundIssuer: z
    .union([z.string(), z.array(z.string())])
    .nullish()
    .transform((value) => (typeof value === 'string' ? (value ? [value] : []) : value)),
  ExpirationLeeway: goDuration.nullish(),
  NotBeforeLeeway: goDuration.nullish(),
  ClockSkewLeeway: goDuration.nullish(),
  ClaimMappings: z.record(z.string(), z.string()).nullish(),
  ListClaimMappings: z.record(z.string(), z.string()).nullish(),
  VerboseOIDCLogging: z.boolean().nullish(),
});

export const authMethodBody = z.object({
  Name: z.string().optional(),
  Type: z.string().optional(),
  TokenLocality: z.string().optional(),
  TokenNameFormat: z.string().optional(),
  MaxTokenTTL: goDuration.optional(),
  Default: z.boolean().optional(),
  Config: configSchema.nullish(),
});
type AuthMethodBody = z.infer<typeof authMethodBody>;

/** Drops empty members so a stored config only says what was set. */
function cleanConfig(config: z.infer<typeof configSchema> | null | undefined): AuthMethodConfig {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config ?? {})) {
    if (value === null || value === undefined || value === '' || value === 0) continue;
    if (Array.isArray(value) && value.length === 0) continue;
    if (typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0) continue;
    out[key] = typeof value === 'number' ? formatDuration(value) : value;
  }
  return out as AuthMethodConfig;
}

export class AclAuthMethods {
  bindingRules!: AclBindingRules;

  constructor(
    private readonly state: SchedulerState,
    private readonly keyring: Keyring,
  ) {}

  private unseal(item: Record<string, unknown> | undefined): AclAuthMethod | undefined {
    const method = withoutKeys<AclAuthMethod & { SealedClientSecret?: string }>(item as never);
    if (!method) return undefined;
    const { SealedClientSecret, ...rest } = method;
    if (SealedClientSecret) rest.Config = { ...rest.Config, OIDCClientSecret: this.keyring.open(SealedClientSecret, sealContext(rest.Name)) };
    return rest;
  }

  /** The method of that name; a name no method can have (it might not fit a key) finds none. */
  async get(name: string): Promise<AclAuthMethod | undefined> {
    if (!validAuthMethodName.test(name)) return undefined;
    return this.unseal(await this.state.store.get(AUTH_METHOD_PK, name));
  }

  async list(): Promise<AclAuthMethod[]> {
    return (await this.state.store.prefix(AUTH_METHOD_PK, '')).map((item) => this.unseal(item) as AclAuthMethod);
  }

  /**
   * Creates (`create`: the name must be free) or updates a method; an unchanged method keeps its index. The reads
   * are made in the write's plan: of concurrent creates of one name one wins, and an identical change is made once.
   */
  async upsert(body: AuthMethodBody, mode: 'create' | 'update'): Promise<AclAuthMethod> {
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
    if (content.Type !== 'JWT' && content.Type !== 'OIDC') problems.push(`invalid token type '${shown(body.Type ?? '')}'`);
    if (content.TokenLocality !== 'local' && content.TokenLocality !== 'global') problems.push(`invalid token locality '${shown(content.TokenLocality)}'`);
    if (!((body.MaxTokenTTL ?? 0) > 0)) problems.push('missing max token TTL');
    if (content.Type === 'JWT') {
      const sources = [config.JWTValidationPubKeys, config.JWKSURL, config.OIDCDiscoveryURL].filter((value) => value !== undefined);
      if (sources.length !== 1) problems.push('exactly one of JWTValidationPubKeys, JWKSURL, or OIDCDiscoveryURL must be set for type JWT');
    }
    if (content.Type === 'OIDC') {
      if (!config.OIDCDiscoveryURL) problems.push('missing OIDC discovery URL');
      if (!config.OIDCClientID) problems.push('missing OIDC client ID');
      if (!config.OIDCClientSecret) problems.push('missing OIDC client secret');
    }
    for (const [label, url] of [['JWKSURL', config.JWKSURL], ['OIDCDiscoveryURL', config.OIDCDiscoveryURL]] as const) {
      if (url && !URL.canParse(url)) problems.push(`${label} is not a URL`);
    }
    if (problems.length > 0) throw badRequest(`ACL auth method validation failed: ${problems.join('; ')}`);
    const now = rfc3339(this.state.clock.now());
    let result: AclAuthMethod | undefined;
    await this.state.commit(async (index) => {
      const existing = await this.get(name);
      if (mode === 'create' && existing) throw badRequest(`auth method ${name} already exists`);
      if (mode === 'update' && !existing) throw notFound('ACL auth-method not found');
      if (content.Default) {
        const other = (await this.list()).find((method) => method.Default && method.Type === content.Type && method.Name !== name);
        if (other) throw badRequest(`default method for type ${content.Type} already exists: ${other.Name}`);
      }
      if (existing && sameContent(content, pick(existing))) {
        result = existing;
        return undefined;
      }
      const stored: AclAuthMethod = {
        ...content,
        Hash: contentHash(content),
        CreateTime: existing?.CreateTime ?? now,
        ModifyTime: now,
        CreateIndex: existing?.CreateIndex ?? index,
        ModifyIndex: index,
      };
      result = stored;
      const { OIDCClientSecret, ...publicConfig } = stored.Config;
      return {
        items: [
          {
            Put: {
              Item: {
                pk: AUTH_METHOD_PK,
                sk: name,
                ...stored,
                Config: publicConfig,
                ...(OIDCClientSecret ? { SealedClientSecret: this.keyring.seal(OIDCClientSecret, sealContext(name)) } : {}),
              },
              ConditionExpression: existing ? 'ModifyIndex = :seen' : 'attribute_not_exists(pk)',
              ...(existing ? { ExpressionAttributeValues: { ':seen': existing.ModifyIndex } } : {}),
            },
          },
        ],
        tables: ['acl_auth_method'],
        events: [authMethodEvent('ACLAuthMethodUpserted', stored)],
      };
    });
    return result as AclAuthMethod;
  }

  /**
   * Deletes the method and, in the same transaction, its binding rules (as Nomad does); 404 when there is none, also
   * for each loser of concurrent deletes. The method and its rules are read in the write's plan, so each deletion
   * (and its event) happens once and a rule written meanwhile is not left behind.
   */
  async delete(name: string): Promise<number> {
    return this.state.commit(async () => {
      const existing = await this.get(name);
      if (!existing) throw notFound('ACL auth-method not found');
      const rules = (await this.bindingRules.list()).filter((rule) => rule.AuthMethod === name);
      return {
        items: [
          { Delete: { Key: { pk: AUTH_METHOD_PK, sk: name }, ConditionExpression: 'attribute_exists(pk)' } },
          ...rules.map((rule) => this.bindingRules.deleteItem(rule.ID)),
        ],
        tables: ['acl_auth_method', ...(rules.length > 0 ? (['acl_binding_rule'] as const) : [])],
        events: [authMethodEvent('ACLAuthMethodDeleted', existing), ...rules.map((rule) => this.bindingRules.event('ACLBindingRuleDeleted', rule))],
      };
    });
  }
}

const pick = (method: AclAuthMethod) => ({
  Name: method.Name,
  Type: method.Type,
  TokenLocality: method.TokenLocality,
  TokenNameFormat: method.TokenNameFormat,
  MaxTokenTTL: method.MaxTokenTTL,
  Default: method.Default,
  Config: method.Config,
});

/** The method as anyone sees it (replies, events): the OIDC client secret is sealed at rest and never shown. */
function withoutSecret(method: AclAuthMethod): AclAuthMethod {
  const { OIDCClientSecret: _secret, ...config } = method.Config;
  return { ...method, Config: config };
}

function authMethodEvent(type: string, method: AclAuthMethod): PendingEvent {
  return { Topic: 'ACLAuthMethod', Type: type, Key: method.Name, Namespace: '', FilterKeys: null, Payload: { ACLAuthMethod: withoutSecret(method) } };
}

const stub = (method: AclAuthMethod) => ({
  Name: method.Name,
  Type: method.Type,
  Default: method.Default,
  Hash: method.Hash,
  CreateIndex: method.CreateIndex,
  ModifyIndex: method.ModifyIndex,
});

export function authMethodRoutes(app: Hono<SchedulerEnv>): void {
  // Anyone may list auth methods: a login screen needs them before the user has a token.
  app.get('/v1/acl/auth-methods', async (c) => {
    const { scheduler } = c.var;
    return blockingQuery(c, scheduler.state, ['acl_auth_method'], async () =>
      (await scheduler.authMethods.list()).map(stub),
    );
  });

  app.post('/v1/acl/auth-method', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    const method = await scheduler.authMethods.upsert(await readBody(c, authMethodBody), 'create');
    setIndexHeaders(c, method.ModifyIndex);
    return c.json(withoutSecret(method));
  });

  app.get('/v1/acl/auth-method/:name', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    return blockingQuery(c, scheduler.state, ['acl_auth_method'], async () => {
      const method = await scheduler.authMethods.get(requireAuthMethodName(c.req.param('name')));
      if (!method) throw notFound('ACL auth-method not found');
      return withoutSecret(method);
    });
  });

  const update = async (c: Context<SchedulerEnv>) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    const name = requireAuthMethodName(c.req.param('name') as string);
    const body = await readBody(c, authMethodBody);
    if (body.Name && body.Name !== name) throw badRequest('ACL auth-method name in URL must match name in body');
    const method = await scheduler.authMethods.upsert({ ...body, Name: name }, 'update');
    setIndexHeaders(c, method.ModifyIndex);
    return c.json(withoutSecret(method));
  };
  app.post('/v1/acl/auth-method/:name', update);
  app.put('/v1/acl/auth-method/:name', update);

  app.delete('/v1/acl/auth-method/:name', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    setIndexHeaders(c, await scheduler.authMethods.delete(requireAuthMethodName(c.req.param('name'))));
    return c.body(null, 200);
  });
}
