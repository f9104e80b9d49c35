/**
 * ACL tokens: `/v1/acl/bootstrap`, `/v1/acl/tokens`, `/v1/acl/token`, `/v1/acl/token/:accessor_id`,
 * `/v1/acl/token/self`. Secrets are stored only as keyed hashes, so a secret is shown once, when the token
 * is created (bootstrap, create, login).
 */
import type { Context, Hono } from 'hono';
import * as z from 'zod';
import { formatDuration } from '../../lib/duration.ts';
import { uuid } from '../../lib/random.ts';
import { dueKey, ttlBackstop } from '../../storage/due.ts';
import type { TransactItem } from '../../storage/store.ts';
import { badRequest, blockingQuery, NomadError, notFound, permissionDenied, readBody, setIndexHeaders } from '../http/nomad.ts';
import type { SchedulerEnv } from '../scheduler.ts';
import { META_PK, type PendingEvent, type SchedulerState, WriteConditionFailed } from '../state.ts';
import { contentHash, rfc3339, withoutKeys } from './common.ts';
import { requireUuid, shown, validUuid } from './identifiers.ts';
import type { AclRoles } from './roles.ts';

export const TOKEN_PK = 'sched#token';
export const SECRET_PK = 'sched#secret';
export const TOKEN_EXPIRY_QUEUE = 'sched#token-expiry';

export interface RoleLink {
  ID: string;
  Name: string;
}

export interface AclToken {
  AccessorID: string;
  Name: string;
  Type: 'client' | 'management';
  Policies: string[];
  Roles: RoleLink[];
  Global: boolean;
  CreateTime: string;
  ExpirationTime?: string;
  ExpirationTTL?: string;
  Hash: string;
  CreateIndex: number;
  ModifyIndex: number;
}

export type StoredToken = AclToken & { SecretHash: string };

/** A token as the API shows it; `SecretID` only when it was just minted. */
export type TokenView = AclToken & { SecretID?: string };

export interface TokenInput {
  Name?: string;
  Type?: string;
  Policies?: string[];
  Roles?: Array<{ ID?: string; Name?: string }>;
  Global?: boolean;
  /** Seconds. */
  ExpirationTTL?: number;
  ExpirationTime?: string;
}

const minTtlSeconds = 60;
const maxTtlSeconds = 24 * 3600;

export const view = (token: StoredToken | AclToken): AclToken => {
  const { SecretHash: _hash, ...rest } = token as StoredToken;
  return rest;
};

export class AclTokens {
  /** Set by the scheduler once roles exist (roles and tokens refer to each other). */
  roles!: AclRoles;

  constructor(
    private readonly state: SchedulerState,
    private readonly hash: (secret: string) => string,
  ) {}

  /** The token of an accessor ID; an ID that is not a UUID finds none. */
  async get(accessor: string): Promise<StoredToken | undefined> {
    if (!validUuid.test(accessor)) return undefined;
    return withoutKeys<StoredToken>(await this.state.store.get(TOKEN_PK, accessor));
  }

  async list(): Promise<StoredToken[]> {
    return (await this.state.store.prefix(TOKEN_PK, '')).map((item) => withoutKeys<StoredToken>(item) as StoredToken);
  }

  /** The token of a secret; an expired token is deleted and refused. */
  async bySecret(secret: string): Promise<StoredToken> {
    const link = await this.state.store.get(SECRET_PK, this.hash(secret));
    const token = link ? await this.get(link.accessor as string) : undefined;
    if (!token) throw new NomadError(403, 'ACL token not found');
    if (this.expired(token)) {
      await this.delete(token.AccessorID).catch(() => undefined);
      throw new NomadError(403, 'ACL token expired');
    }
    return token;
  }

  expired(token: AclToken): boolean {
    return token.ExpirationTime !== undefined && Date.parse(token.ExpirationTime) <= this.state.clock.now();
  }

  async bootstrap(secret: string | undefined): Promise<TokenView> {
    if (secret !== undefined && secret !== '' && !validUuid.test(secret)) throw badRequest('BootstrapSecret must be a UUID');
    const done = await this.state.store.get(META_PK, 'bootstrap');
    if (done) throw badRequest(`ACL bootstrap already done (reset index: ${done.index as number})`);
    try {
      return await this.mint(
        { Name: 'Bootstrap Token', Type: 'management', Global: true },
        { secret: secret || uuid(), extra: (index) => [{ Put: { Item: { pk: META_PK, sk: 'bootstrap', index }, ConditionExpression: 'attribute_not_exists(pk)' } }] },
      );
    } catch (error) {
      if (error instanceof WriteConditionFailed) {
        const again = await this.state.store.get(META_PK, 'bootstrap');
        throw badRequest(`ACL bootstrap already done (reset index: ${(again?.index as number) ?? 0})`);
      }
      throw error;
    }
  }

  /**
   * Validates and creates a token; `extra` adds items to the same transaction. `anyExpiration` lifts the
   * 1m..24h bounds of a requested expiry (a login's token lives as long as its auth method's MaxTokenTTL).
   */
  async mint(
    input: TokenInput,
    options: { secret?: string; extra?: (index: number) => TransactItem[]; anyExpiration?: boolean } = {},
  ): Promise<TokenView> {
    const type = input.Type || 'client';
    const policies = [...new Set(input.Policies ?? [])];
    const roles = await this.resolveRoles(input.Roles ?? []);
    validate(type, input.Name ?? '', policies, roles);
    const now = this.state.clock.now();
    let expiration: number | undefined;
    if (input.ExpirationTTL !== undefined && input.ExpirationTTL > 0 && input.ExpirationTime) {
      throw badRequest('Cannot set both ExpirationTime and ExpirationTTL');
    }
    if (input.ExpirationTTL !== undefined && input.ExpirationTTL > 0) expiration = now + input.ExpirationTTL * 1000;
    if (input.ExpirationTime) {
      expiration = Date.parse(input.ExpirationTime);
      if (Number.isNaN(expiration)) throw badRequest('ExpirationTime is not an RFC 3339 time');
    }
    if (expiration !== undefined && !options.anyExpiration) {
      if (expiration < now + minTtlSeconds * 1000) throw badRequest(`expiration time cannot be less than ${formatDuration(minTtlSeconds)} in the future`);
      if (expiration > now + maxTtlSeconds * 1000) throw badRequest(`expiration time cannot be more than ${formatDuration(maxTtlSeconds)} in the future`);
    }
    const secret = options.secret ?? uuid();
    const accessor = uuid();
    let stored: StoredToken | undefined;
    await this.state.commit((index) => {
      const content = {
        AccessorID: accessor,
        Name: input.Name ?? '',
        Type: type as AclToken['Type'],
        Policies: type === 'management' ? [] : policies,
        Roles: type === 'management' ? [] : roles,
        Global: input.Global ?? false,
        CreateTime: rfc3339(now),
        ...(expiration !== undefined ? { ExpirationTime: rfc3339(expiration) } : {}),
        ...(input.ExpirationTTL ? { ExpirationTTL: formatDuration(input.ExpirationTTL) } : {}),
      };
      stored = { ...content, Hash: contentHash(content), CreateIndex: index, ModifyIndex: index, SecretHash: this.hash(secret) };
      const expiry = expiration !== undefined ? Math.ceil(expiration / 1000) : undefined;
      const queue = expiry !== undefined ? { duePk: TOKEN_EXPIRY_QUEUE, dueSk: dueKey(expiry, accessor) } : {};
      return {
        items: [
          { Put: { Item: { pk: TOKEN_PK, sk: accessor, ...stored, ...queue }, ConditionExpression: 'attribute_not_exists(pk)' } },
          {
            Put: {
              Item: { pk: SECRET_PK, sk: stored.SecretHash, accessor, ...(expiry !== undefined ? { expiresAt: ttlBackstop(expiry) } : {}) },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          ...(options.extra?.(index) ?? []),
        ],
        tables: ['acl_token'],
        events: [tokenEvent('ACLTokenUpserted', stored)],
      };
    });
    return { ...view(stored as StoredToken), SecretID: secret };
  }

  /** Updates a token; the read is made in the write's plan, so an identical change is made (and published) once. */
  async update(accessor: string, input: TokenInput): Promise<AclToken> {
    const policies = [...new Set(input.Policies ?? [])];
    const roles = await this.resolveRoles(input.Roles ?? []);
    let result: StoredToken | undefined;
    await this.state.commit(async (index) => {
      const existing = await this.get(accessor);
      if (!existing || this.expired(existing)) throw notFound('ACL token not found');
      const type = input.Type || existing.Type;
      validate(type, input.Name ?? '', policies, roles);
      if (input.Global !== undefined && input.Global !== existing.Global) throw badRequest('Cannot toggle global value');
      if ((input.ExpirationTTL ?? 0) > 0 || (input.ExpirationTime && input.ExpirationTime !== existing.ExpirationTime)) {
        throw badRequest('Cannot update expiration of an existing token');
      }
      const content = {
        AccessorID: accessor,
        Name: input.Name ?? '',
        Type: type as AclToken['Type'],
        Policies: type === 'management' ? [] : policies,
        Roles: type === 'management' ? [] : roles,
        Global: existing.Global,
        CreateTime: existing.CreateTime,
        ...(existing.ExpirationTime ? { ExpirationTime: existing.ExpirationTime } : {}),
        ...(existing.ExpirationTTL ? { ExpirationTTL: existing.ExpirationTTL } : {}),
      };
      if (contentHash(content) === existing.Hash) {
        result = existing;
        return undefined;
      }
      const stored: StoredToken = {
        ...content,
        Hash: contentHash(content),
        CreateIndex: existing.CreateIndex,
        ModifyIndex: index,
        SecretHash: existing.SecretHash,
      };
      result = stored;
      return {
        items: [
          {
            Update: {
              Key: { pk: TOKEN_PK, sk: accessor },
              UpdateExpression: 'SET #n = :n, #t = :t, Policies = :p, #r = :r, #h = :h, ModifyIndex = :i',
              ConditionExpression: 'attribute_exists(pk)',
              ExpressionAttributeNames: { '#n': 'Name', '#t': 'Type', '#r': 'Roles', '#h': 'Hash' },
              ExpressionAttributeValues: { ':n': content.Name, ':t': content.Type, ':p': content.Policies, ':r': content.Roles, ':h': stored.Hash, ':i': index },
            },
          },
        ],
        tables: ['acl_token'],
        events: [tokenEvent('ACLTokenUpserted', stored)],
      };
    });
    return view(result as StoredToken);
  }

  /**
   * Deletes a token. A missing one is Nomad's 400 ("Cannot delete nonexistent tokens"), also for each loser of
   * concurrent deletes: the read is made in the write's plan, so one delete happens and publishes the event.
   */
  async delete(accessor: string): Promise<number> {
    return this.state.commit(async () => {
      const existing = await this.get(accessor);
      if (!existing) throw badRequest(`Cannot delete nonexistent tokens: ${shown(accessor)}`);
      return {
        items: [
          { Delete: { Key: { pk: TOKEN_PK, sk: accessor }, ConditionExpression: 'attribute_exists(pk)' } },
          { Delete: { Key: { pk: SECRET_PK, sk: existing.SecretHash } } },
        ],
        tables: ['acl_token'],
        events: [tokenEvent('ACLTokenDeleted', existing)],
      };
    });
  }

  /** Deletes tokens whose expiration has passed (the guarantee; DynamoDB's TTL only removes the secret links). */
  async sweepExpired(): Promise<number> {
    const nowSeconds = Math.floor(this.state.clock.now() / 1000);
    const due = await this.state.store.query({
      IndexName: 'due',
      KeyConditionExpression: 'duePk = :q AND dueSk <= :now',
      ExpressionAttributeValues: { ':q': TOKEN_EXPIRY_QUEUE, ':now': dueKey(nowSeconds, '~') },
    });
    let removed = 0;
    for (const item of due) {
      try {
        await this.delete(item.sk);
        removed++;
      } catch (error) {
        if (!(error instanceof NomadError)) throw error;
      }
    }
    return removed;
  }

  /** Role links by ID or Name, resolved to both; an unknown role is refused. */
  private async resolveRoles(links: Array<{ ID?: string; Name?: string }>): Promise<RoleLink[]> {
    const out = new Map<string, RoleLink>();
    for (const link of links) {
      const role = link.ID ? await this.roles.get(link.ID) : link.Name ? await this.roles.getByName(link.Name) : undefined;
      if (!role) throw badRequest(`cannot find role ${shown(link.ID || link.Name || '""')}`);
      out.set(role.ID, { ID: role.ID, Name: role.Name });
    }
    return [...out.values()];
  }
}

function validate(type: string, name: string, policies: string[], roles: RoleLink[]): void {
  if (name.length > 256) throw badRequest('token name too long');
  if (type === 'client') {
    if (policies.length === 0 && roles.length === 0) throw badRequest('client token missing policies or roles');
  } else if (type === 'management') {
    if (policies.length > 0 || roles.length > 0) throw badRequest('management token cannot be associated with policies or roles');
  } else {
    throw badRequest('token type must be client or management');
  }
}

export function tokenEvent(type: string, token: AclToken): PendingEvent {
  return { Topic: 'ACLToken', Type: type, Key: token.AccessorID, Namespace: '', FilterKeys: null, Payload: { ACLToken: view(token) } };
}

/** Nomad's ExpirationTTL: a duration string or nanoseconds. */
const ttlField = z
  .union([z.string(), z.number()])
  .optional()
  .transform((value, ctx) => {
    if (value === undefined || value === '' || value === 0) return undefined;
    if (typeof value === 'number') return Math.floor(value / 1e9);
    const match = /^((\d+(\.\d+)?)(ns|us|µs|ms|s|m|h))+$/.test(value);
    if (!match) {
      ctx.addIssue({ code: 'custom', message: `invalid duration "${value}"` });
      return z.NEVER;
    }
    let total = 0;
    for (const [, amount, , unit] of value.matchAll(/(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) {
      total += Number(amount) * ({ ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 }[unit as 's'] ?? 0);
    }
    return Math.floor(total);
  });

export const tokenBody = z.object({
  AccessorID: z.string().optional(),
  Name: z.string().optional(),
  Type: z.string().optional(),
  Policies: z.array(z.string()).nullish().transform((value) => value ?? []),
  Roles: z
    .array(z.object({ ID: z.string().optional(), Name: z.string().optional() }))
    .nullish()
    .transform((value) => value ?? []),
  Global: z.boolean().optional(),
  ExpirationTTL: ttlField,
  ExpirationTime: z.string().nullish().transform((value) => value ?? undefined),
});

const stub = (token: AclToken) => ({
  AccessorID: token.AccessorID,
  Name: token.Name,
  Type: token.Type,
  Policies: token.Policies,
  Roles: token.Roles,
  Global: token.Global,
  Hash: token.Hash,
  CreateTime: token.CreateTime,
  ExpirationTime: token.ExpirationTime ?? null,
  CreateIndex: token.CreateIndex,
  ModifyIndex: token.ModifyIndex,
});

export function tokenRoutes(app: Hono<SchedulerEnv>): void {
  app.post('/v1/acl/bootstrap', async (c) => {
    const body = await readBody(c, z.object({ BootstrapSecret: z.string().optional() }));
    const token = await c.var.scheduler.tokens.bootstrap(body.BootstrapSecret);
    setIndexHeaders(c, token.CreateIndex);
    return c.json(token);
  });

  app.get('/v1/acl/tokens', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    const prefix = c.req.query('prefix') ?? '';
    return blockingQuery(c, scheduler.state, ['acl_token'], async () =>
      (await scheduler.tokens.list())
        .filter((token) => token.AccessorID.startsWith(prefix) && !scheduler.tokens.expired(token))
        .sort((a, b) => a.CreateIndex - b.CreateIndex)
        .map(stub),
    );
  });

  app.post('/v1/acl/token', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    const body = await readBody(c, tokenBody);
    if (body.AccessorID) throw badRequest('Specifying AccessorID is not allowed when creating a token');
    const token = await scheduler.tokens.mint(body);
    setIndexHeaders(c, token.ModifyIndex);
    return c.json(token);
  });

  app.get('/v1/acl/token/self', async (c) => {
    const { scheduler } = c.var;
    const caller = await scheduler.caller(c);
    if (!caller.token) throw new NomadError(404, 'ACL token not found');
    return blockingQuery(c, scheduler.state, ['acl_token'], async () => view(caller.token as AclToken));
  });

  app.get('/v1/acl/token/:accessor', async (c) => {
    const { scheduler } = c.var;
    const caller = await scheduler.caller(c);
    const accessor = c.req.param('accessor');
    if (!caller.management && caller.token?.AccessorID !== accessor) throw permissionDenied();
    requireUuid(accessor, 'ACL token accessor ID');
    return blockingQuery(c, scheduler.state, ['acl_token'], async () => {
      const token = await scheduler.tokens.get(accessor);
      if (!token || scheduler.tokens.expired(token)) throw notFound('ACL token not found');
      return view(token);
    });
  });

  const update = async (c: Context<SchedulerEnv>) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    const accessor = requireUuid(c.req.param('accessor') as string, 'ACL token accessor ID');
    const body = await readBody(c, tokenBody);
    if (body.AccessorID && body.AccessorID !== accessor) throw badRequest('Token accessor ID does not match request path');
    const token = await scheduler.tokens.update(accessor, body);
    setIndexHeaders(c, token.ModifyIndex);
    return c.json(token);
  };
  app.post('/v1/acl/token/:accessor', update);
  app.put('/v1/acl/token/:accessor', update);

  app.delete('/v1/acl/token/:accessor', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    setIndexHeaders(c, await scheduler.tokens.delete(requireUuid(c.req.param('accessor'), 'ACL token accessor ID')));
    return c.body(null, 200);
  });
}
