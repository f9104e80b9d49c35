/**
 * ACL tokens in the table: one item per token (`TOKEN_PK`, the accessor ID) and one per secret (`SECRET_PK`, its
 * keyed hash → the accessor ID). Secrets are stored only as keyed hashes, so a secret is shown once, when the token
 * is created (bootstrap, create, login). A token with an expiration waits in the `due` queue `TOKEN_EXPIRY_QUEUE`.
 */
import { randomBytes } from 'node:crypto';
import { bootstrapMarkerKind } from '../../../storage/bootstrap-marker.ts';
import { formatDuration } from '../../../lib/duration.ts';
import { badRequest, DomainError, notFound, permissionDenied, unavailable } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/log.ts';
import { uuid } from '../../../lib/random.ts';
import { dueKey, ttlBackstop } from '../../../storage/due.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import type { Write } from '../../../storage/store.ts';
import {
  AUTH_METHOD_PK,
  BINDING_RULE_PK,
  BOOTSTRAP_SK,
  META_PK,
  POLICY_PK,
  ROLE_PK,
  SECRET_PK,
  TOKEN_EXPIRY_QUEUE,
  TOKEN_PK,
} from '../../keys.ts';
import { type SchedulerState, WriteConditionFailed } from '../../state.ts';
import { contentHash, rfc3339, withoutKeys } from '../common.ts';
import { shown, validUuid } from '../identifiers.ts';
import type { AclRoles } from '../roles/store.ts';
import {
  type AclToken,
  maxTtlSeconds,
  minTtlSeconds,
  type RoleLink,
  type StoredToken,
  type TokenInput,
  type TokenView,
  tokenEvent,
  validateToken,
  view,
} from './model.ts';

/** A token item is authenticated (`storage/item-mac.ts`), all but its place in the expiry queue. */
export const tokenKind = itemKind('scheduler-acl-token', ['duePk', 'dueSk', 'expiresAt'], { epoch: 'bootstrap' });

/** The bootstrap marker's kind (`storage/bootstrap-marker.ts`): never believed alone (`bootstrapStatus`). */
export { bootstrapMarkerKind };

/**
 * Partitions that hold items only once ACLs were bootstrapped (every write to them needs a management token, and
 * the first one is the bootstrap's): one item in any of them beside a missing marker is tampering.
 */
const bootstrappedPartitions = [TOKEN_PK, POLICY_PK, ROLE_PK, AUTH_METHOD_PK, BINDING_RULE_PK];

export class AclTokens {
  constructor(
    private readonly state: SchedulerState,
    private readonly roles: AclRoles,
    private readonly hash: (secret: string) => string,
    private readonly log: Logger,
  ) {}

  /** The token of an accessor ID; an ID that is not a UUID finds none. */
  async get(accessor: string): Promise<StoredToken | undefined> {
    if (!validUuid.test(accessor)) return undefined;
    return withoutKeys<StoredToken>(await this.state.store.getVerified(tokenKind, TOKEN_PK, accessor));
  }

  async list(): Promise<StoredToken[]> {
    return (await this.state.store.list(TOKEN_PK))
      .filter((item) => this.state.store.verified(tokenKind, item))
      .map((item) => withoutKeys<StoredToken>(item) as StoredToken);
  }

  /** The token of a secret; an expired token is deleted and refused. */
  async bySecret(secret: string): Promise<StoredToken> {
    const hash = this.hash(secret);
    const link = await this.state.store.get(SECRET_PK, hash);
    const found = link ? await this.get(link.accessor as string) : undefined;
    // The secret's link is not authenticated; the token is, and must carry this secret's hash back.
    const token = found?.SecretHash === hash ? found : undefined;
    if (!token) throw permissionDenied('ACL token not found');
    if (this.expired(token)) {
      await this.delete(token.AccessorID).catch(() => undefined);
      throw permissionDenied('ACL token expired');
    }
    return token;
  }

  expired(token: AclToken): boolean {
    return token.ExpirationTime !== undefined && Date.parse(token.ExpirationTime) <= this.state.clock.now();
  }

  /**
   * Whether ACLs were bootstrapped: `done` with the index it was done at, or `fresh`. A marker that is missing (or
   * that fails its MAC) beside any ACL item is tampering: it is logged and refused (503), never taken as "bootstrap
   * again" (which would hand out a new management token over the existing state).
   */
  async bootstrapStatus(): Promise<{ done: false } | { done: true; index: number }> {
    const marker = await this.state.store.get(META_PK, BOOTSTRAP_SK);
    if (marker) {
      // Any marker refuses a bootstrap; one that fails its MAC (logged by `verified`) says no index.
      const verified = this.state.store.verified(bootstrapMarkerKind, marker);
      return { done: true, index: (verified?.index as number | undefined) ?? 0 };
    }
    const found = await Promise.all(
      bootstrappedPartitions.map(async (partition) => (await this.state.store.list(partition, { limit: 1 }))[0]),
    );
    const evidence = found.find((item) => item !== undefined);
    if (evidence) {
      this.log.error('storage integrity: the ACL bootstrap marker is missing although ACL items exist', {
        marker: `${META_PK}/${BOOTSTRAP_SK}`,
        pk: evidence.pk,
        sk: evidence.sk,
      });
      throw unavailable(
        'ACL bootstrap refused: the bootstrap marker is missing from storage while ACL tokens, policies, roles, auth methods or binding rules exist; it was deleted or expired outside the scheduler (tampering), so no new management token is made. Restore the table from a backup',
      );
    }
    return { done: false };
  }

  async bootstrap(secret: string | undefined): Promise<TokenView> {
    if (secret !== undefined && secret !== '' && !validUuid.test(secret))
      throw badRequest('BootstrapSecret must be a UUID');
    const status = await this.bootstrapStatus();
    if (status.done) throw badRequest(`ACL bootstrap already done (reset index: ${status.index})`);
    // This bootstrap's epoch: every ACL token, policy, role, auth method, binding rule and sign-in signed from now on
    // binds it (ItemKind.epoch), so nothing of an earlier bootstrap put back by a table writer verifies after it.
    const epoch = randomBytes(16).toString('base64url');
    this.state.store.useEpoch('bootstrap', epoch);
    try {
      return await this.mint(
        { Name: 'Bootstrap Token', Type: 'management', Global: true },
        {
          secret: secret || uuid(),
          extra: (index) => [
            {
              put: this.state.store.signed(bootstrapMarkerKind, { pk: META_PK, sk: BOOTSTRAP_SK, index, epoch }),
              when: { absent: true },
            },
          ],
        },
      );
    } catch (error) {
      // Not bootstrapped here: the epoch is the table's (another process's bootstrap, or none yet).
      this.state.store.useEpoch('bootstrap', undefined);
      await this.state.store.readEpoch('bootstrap');
      if (error instanceof WriteConditionFailed) {
        const again = await this.bootstrapStatus();
        throw badRequest(`ACL bootstrap already done (reset index: ${again.done ? again.index : 0})`);
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
    options: {
      secret?: string;
      extra?: (index: number) => Write[];
      anyExpiration?: boolean;
      loginMethod?: string;
    } = {},
  ): Promise<TokenView> {
    const type = input.Type || 'client';
    const policies = [...new Set(input.Policies ?? [])];
    const roles = await this.resolveRoles(input.Roles ?? []);
    validateToken(type, input.Name ?? '', policies, roles);
    const now = this.state.clock.now();
    let expiration: number | undefined;
    if (input.ExpirationTTL !== undefined && input.ExpirationTime) {
      throw badRequest('Cannot set both ExpirationTime and ExpirationTTL');
    }
    // Any TTL that was given (the body's schema drops an empty or zero one) sets an expiration: one under a second
    // or negative is refused as too short below, as Nomad refuses it, never taken as "no TTL".
    if (input.ExpirationTTL !== undefined) expiration = now + input.ExpirationTTL * 1000;
    if (input.ExpirationTime) {
      expiration = Date.parse(input.ExpirationTime);
      if (Number.isNaN(expiration)) throw badRequest('ExpirationTime is not an RFC 3339 time');
    }
    if (expiration !== undefined && !options.anyExpiration) {
      if (expiration < now + minTtlSeconds * 1000)
        throw badRequest(`expiration time cannot be less than ${formatDuration(minTtlSeconds)} in the future`);
      if (expiration > now + maxTtlSeconds * 1000)
        throw badRequest(`expiration time cannot be more than ${formatDuration(maxTtlSeconds)} in the future`);
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
      stored = {
        ...content,
        Hash: contentHash(content),
        CreateIndex: index,
        ModifyIndex: index,
        SecretHash: this.hash(secret),
        ...(options.loginMethod ? { LoginMethod: options.loginMethod } : {}),
      };
      const expiry = expiration !== undefined ? Math.ceil(expiration / 1000) : undefined;
      const queue = expiry !== undefined ? { duePk: TOKEN_EXPIRY_QUEUE, dueSk: dueKey(expiry, accessor) } : {};
      return {
        items: [
          {
            put: this.state.store.signed(tokenKind, { pk: TOKEN_PK, sk: accessor, ...stored, ...queue }),
            when: { absent: true },
          },
          {
            put: {
              pk: SECRET_PK,
              sk: stored.SecretHash,
              accessor,
              ...(expiry !== undefined ? { expiresAt: ttlBackstop(expiry) } : {}),
            },
            when: { absent: true },
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
      validateToken(type, input.Name ?? '', policies, roles);
      if (input.Global !== undefined && input.Global !== existing.Global)
        throw badRequest('Cannot toggle global value');
      if (
        input.ExpirationTTL !== undefined ||
        (input.ExpirationTime && input.ExpirationTime !== existing.ExpirationTime)
      ) {
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
            update: { pk: TOKEN_PK, sk: accessor },
            // The item becomes exactly `stored` (the commit is index-guarded, so nothing changed it since the read): its MAC with it.
            change: {
              set: {
                Name: content.Name,
                Type: content.Type,
                Policies: content.Policies,
                Roles: content.Roles,
                Hash: stored.Hash,
                ModifyIndex: index,
                mac: this.state.store.macOf(tokenKind, { pk: TOKEN_PK, sk: accessor, ...stored }),
              },
            },
            when: { exists: true },
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
          { delete: { pk: TOKEN_PK, sk: accessor }, when: { exists: true } },
          { delete: { pk: SECRET_PK, sk: existing.SecretHash } },
        ],
        tables: ['acl_token'],
        events: [tokenEvent('ACLTokenDeleted', existing)],
      };
    });
  }

  /** Deletes tokens whose expiration has passed (the guarantee; DynamoDB's TTL only removes the secret links). */
  async sweepExpired(): Promise<number> {
    const nowSeconds = Math.floor(this.state.clock.now() / 1000);
    const due = await this.state.store.list(TOKEN_EXPIRY_QUEUE, {
      index: 'due',
      range: { to: dueKey(nowSeconds, '~') },
    });
    let removed = 0;
    for (const item of due) {
      try {
        await this.delete(item.sk);
        removed++;
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
      }
    }
    return removed;
  }

  /** Role links by ID or Name, resolved to both; an unknown role is refused. */
  private async resolveRoles(links: Array<{ ID?: string; Name?: string }>): Promise<RoleLink[]> {
    const out = new Map<string, RoleLink>();
    for (const link of links) {
      const role = link.ID
        ? await this.roles.get(link.ID)
        : link.Name
          ? await this.roles.getByName(link.Name)
          : undefined;
      if (!role) throw badRequest(`cannot find role ${shown(link.ID || link.Name || '""')}`);
      out.set(role.ID, { ID: role.ID, Name: role.Name });
    }
    return [...out.values()];
  }
}
