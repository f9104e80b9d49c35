import { type Clock, epochSeconds } from '../../lib/clock.ts';
import { badRequest, notFound, upstreamFailure } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { randomBase62 } from '../../lib/random.ts';
import { allShards, dueKey, shardedQueue, shardKey, ttlBackstop } from '../../storage/due.ts';
import type { Keyring } from '../../storage/keyring.ts';
import { type Condition, ConditionFailed, type Item, type Store, type Write } from '../../storage/store.ts';
import { type MountEntry, type MountTable, mountTtls } from '../mounts/mount-table.ts';
import { forgetOwnedLease, ownLeaseWrite } from '../tokens/token-store.ts';
import type { AskEngine, EngineRequest } from './engine-request.ts';
import type { LeaseRecord, LeaseRunner } from './lease-hooks.ts';
import type { Secret } from './secret.ts';

export interface LeaseItem extends Item {
  leaseId: string;
  mountUuid: string;
  secretType: string;
  issueTime: number;
  expireTime: number;
  /** Renewals never go past this: issue time plus the smallest of backend, mount and system max TTL. */
  maxExpireTime: number;
  lastRenewalTime?: number;
  renewable: boolean;
  ttl: number;
  tokenHash?: string;
  /** The backend's internal data for the revoke hook, sealed. */
  internal: string;
  revocationAttempts: number;
  lastRevocationError?: string;
  irrevocable?: boolean;
  /** Set while one process runs the revoke hook (see `claim`). */
  revokingUntil?: number;
  /**
   * The due queue partition it is revoked from: its engine's queue (`leaseQueue`; in AWS only that engine's job has
   * the hooks), in the shard of its id (`leaseQueueShard`).
   */
  queue: string;
}

/** Leases are queued per mount type, so each engine's job sweeps its own leases and no job bundles every engine. */
export const leaseQueue = (mountType: string) => `expiry:${mountType}`;

/**
 * Sharding (see `storage/due.ts`): a lease lives at `pk = leases#<shard>`, `sk = <lease id>`, and waits in
 * `expiry:<engine>#<shard>`, the shard the same hash of its id, so a lease storm spreads its writes over
 * `shardCount` partitions of the table and of the due index. A read by id is one GetItem; a prefix (list,
 * revoke-prefix, a mount's leases) is one query per shard, in parallel; the sweep reads every shard.
 */
export const leasePk = (leaseId: string) => shardKey('leases', leaseId);
export const leaseKey = (leaseId: string) => ({ pk: leasePk(leaseId), sk: leaseId });
export const leaseQueueShard = (mountType: string, leaseId: string) => shardedQueue(leaseQueue(mountType), leaseId);
/** Whether an item is a lease: under a shard, or under the single partition leases had before sharding. */
export const isLeasePk = (pk: string) => pk === 'leases' || pk.startsWith('leases#');

/** Retries of a failing revocation wait 10 s, 20 s, 40 s… and give up after this many, leaving the lease irrevocable. */
export const maxRevocationAttempts = 6;

/** Tombstones of revoked leases (`pk = revoked-leases`) outlive any redelivery of the table's stream (24 hours). */
const revokedPk = (leaseId: string) => shardKey('revoked-leases', leaseId);
const tombstoneSeconds = 2 * 86_400;

/** How long one revocation attempt holds a lease before another process may try (a hook that hangs, a crash). */
const claimSeconds = 60;

/** The lease is there and no revocation attempt holds it (none began, or its claim lapsed by `now`). */
const unclaimed = (now: number): Condition => ({
  exists: true,
  any: [{ missing: ['revokingUntil'] }, { atMost: { revokingUntil: now } }],
});

/**
 * The hooks of a secret type on a mount, if this process bundles its backend. Given the lease manager that runs
 * them, so the hooks may use the mount's leases without the manager depending on whoever builds them.
 */
export type LeaseHookLookup = (mount: MountEntry, secretType: string, leases: LeaseManager) => LeaseRunner | undefined;

/** What the lease manager works with: the table, time, the mounts, and the backends this process bundles. */
export interface LeaseManagerDeps {
  store: Store;
  keyring: Keyring;
  clock: Clock;
  log: Logger;
  mounts: Pick<MountTable, 'byUuid'>;
  /** Whether this process bundles the backend of a mount type (else its leases are handed to its engine). */
  bundles: (mountType: string) => boolean;
  hooks: LeaseHookLookup;
  /** In AWS, the way to the function that bundles an engine (`CoreOptions.askEngine`). */
  askEngine?: AskEngine;
}

/**
 * Leases (`pk = leases#<shard>`, `sk = <lease id>`): sorted keyspaces, one per shard, so prefixes can be listed and
 * revoked. Every lease sits in the due queue at its expiry; the sweep revokes it through the backend's hook.
 */
export class LeaseManager {
  private readonly store: Store;
  private readonly keyring: Keyring;
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(private readonly deps: LeaseManagerDeps) {
    ({ store: this.store, keyring: this.keyring, clock: this.clock, log: this.log } = deps);
  }

  /** Records the lease for a secret a backend just issued and returns what the envelope shows. */
  async register(
    mount: MountEntry,
    requestPath: string,
    secret: Secret,
    ownerHash: string | undefined,
  ): Promise<{ leaseId: string; ttl: number; renewable: boolean; warnings: string[] }> {
    const { item, warnings } = this.itemFor(mount, requestPath, secret, ownerHash);
    const { leaseId } = item;
    // The condition guards a backend-chosen suffix: a new lease never replaces another.
    const writes: Write[] = [{ put: item, when: { absent: true } }];
    if (ownerHash) writes.push(ownLeaseWrite(ownerHash, leaseId));
    await this.store.transact(writes);
    return { leaseId, ttl: item.ttl, renewable: item.renewable, warnings };
  }

  /** The lease item `register` writes for a secret (also what a bulk writer, the lease-storm bench, writes). */
  itemFor(
    mount: MountEntry,
    requestPath: string,
    secret: Secret,
    ownerHash: string | undefined,
  ): { item: LeaseItem; warnings: string[] } {
    const now = epochSeconds(this.clock);
    const { defaultTtl, maxTtl: mountMax } = mountTtls(mount);
    const maxTtl = Math.min(secret.maxTtl || mountMax, mountMax);
    const warnings: string[] = [];
    let ttl = secret.ttl || defaultTtl;
    if (ttl > maxTtl) {
      warnings.push(`TTL of "${ttl}s" exceeded the effective max_ttl of "${maxTtl}s"; TTL value is capped accordingly`);
      ttl = maxTtl;
    }
    const leaseId = leaseIdFor(mount, requestPath, secret.leaseSuffix);
    const item: LeaseItem = {
      ...leaseKey(leaseId),
      leaseId,
      mountUuid: mount.uuid,
      secretType: secret.type,
      issueTime: now,
      expireTime: now + ttl,
      maxExpireTime: now + maxTtl,
      renewable: secret.renewable ?? true,
      ttl,
      ...(ownerHash ? { tokenHash: ownerHash } : {}),
      internal: this.keyring.seal(JSON.stringify(secret.internal), `leases|${leaseId}`),
      revocationAttempts: 0,
      queue: leaseQueueShard(mount.type, leaseId),
      duePk: leaseQueueShard(mount.type, leaseId),
      dueSk: dueKey(now + ttl, `lease#${leaseId}`),
      expiresAt: ttlBackstop(now + ttl),
    };
    return { item, warnings };
  }

  async get(leaseId: string): Promise<LeaseItem | undefined> {
    return this.store.get<LeaseItem>(leasePk(leaseId), leaseId);
  }

  /** Every lease whose id starts with `prefix`, in id order: one query per shard, in parallel. */
  async under(prefix: string): Promise<LeaseItem[]> {
    const shards = await Promise.all(
      allShards('leases')
        .slice(1)
        .map((pk) => this.store.list<LeaseItem>(pk, { prefix })),
    );
    return shards.flat().sort((a, b) => (a.sk < b.sk ? -1 : 1));
  }

  /**
   * Moves a lease written before sharding (`pk = leases`, bare queue) to its shard, as the sweep meets it in the
   * queue, so it is revoked the normal way. No deployed stage holds such leases; a local data folder may.
   */
  async adoptUnsharded(item: Item): Promise<void> {
    const lease = item as LeaseItem;
    const queue = lease.queue.includes('#') ? lease.queue : shardedQueue(lease.queue, lease.leaseId);
    const moved: LeaseItem = { ...lease, ...leaseKey(lease.leaseId), queue, duePk: queue };
    try {
      await this.store.transact([
        { delete: { pk: lease.pk, sk: lease.sk }, when: { exists: true } },
        { put: moved, when: { absent: true } },
      ]);
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
    }
  }

  /** The backend data of every lease under a prefix (still to be revoked ones too): what an engine's leases hold. */
  async internalsUnder(prefix: string): Promise<Array<Record<string, unknown>>> {
    const leases = await this.under(prefix);
    return leases.map(
      (lease) => JSON.parse(this.keyring.open(lease.internal, `leases|${lease.leaseId}`)) as Record<string, unknown>,
    );
  }

  /** Vault's lookup view, plus whether revocation has failed for good. */
  describe(lease: LeaseItem): Record<string, unknown> {
    const now = epochSeconds(this.clock);
    return {
      id: lease.leaseId,
      issue_time: iso(lease.issueTime),
      expire_time: iso(lease.expireTime),
      last_renewal: lease.lastRenewalTime ? iso(lease.lastRenewalTime) : null,
      renewable: renewable(lease),
      ttl: Math.max(0, lease.expireTime - now),
      irrevocable: lease.irrevocable ?? false,
      revocation_attempts: lease.revocationAttempts,
      ...(lease.lastRevocationError ? { last_revocation_error: lease.lastRevocationError } : {}),
    };
  }

  /** Lease ids directly under a prefix, deeper levels as `name/`. */
  async list(prefix: string): Promise<string[]> {
    const names = new Set<string>();
    for (const item of await this.under(prefix)) {
      const rest = item.sk.slice(prefix.length);
      const slash = rest.indexOf('/');
      names.add(slash === -1 ? rest : rest.slice(0, slash + 1));
    }
    return [...names].sort();
  }

  async renew(leaseId: string, increment: number): Promise<{ lease: LeaseItem; warnings: string[] }> {
    const lease = await this.get(leaseId);
    const now = epochSeconds(this.clock);
    if (!lease || lease.expireTime <= now) throw badRequest('lease not found or lease is not renewable');
    if (!renewable(lease)) throw badRequest('lease is not renewable');
    const { hooks, mount } = await this.hooksFor(lease);
    // As in Vault, the mount's max is read again at each renewal, so tuning it down applies to existing leases.
    let maxExpireTime = Math.min(
      lease.maxExpireTime,
      lease.issueTime + (mount ? mountTtls(mount).maxTtl : Number.POSITIVE_INFINITY),
    );
    if (now >= maxExpireTime) throw badRequest('past the max TTL, cannot renew');
    let ttl = increment || lease.ttl;
    if (hooks?.renew && mount) {
      const decided = await hooks.renew(this.context(lease, mount, increment));
      if (decided?.ttl) ttl = decided.ttl;
      if (decided?.maxTtl) maxExpireTime = Math.min(maxExpireTime, lease.issueTime + decided.maxTtl);
      if (now >= maxExpireTime) throw badRequest('past the max TTL, cannot renew');
    }
    const warnings: string[] = [];
    if (now + ttl > maxExpireTime) {
      warnings.push(
        `TTL of "${ttl}s" exceeded the effective max_ttl of "${maxExpireTime - now}s"; TTL value is capped accordingly`,
      );
      ttl = maxExpireTime - now;
    }
    const renewed: LeaseItem = {
      ...lease,
      expireTime: now + ttl,
      lastRenewalTime: now,
      dueSk: dueKey(now + ttl, `lease#${leaseId}`),
      expiresAt: ttlBackstop(now + ttl),
    };
    try {
      await this.store.put(renewed, { when: unclaimed(now) });
    } catch (error) {
      if (error instanceof ConditionFailed) throw badRequest('lease not found or lease is not renewable');
      throw error;
    }
    return { lease: renewed, warnings };
  }

  /**
   * Revokes through the backend's hook, then forgets the lease. A failing hook leaves the lease queued for a
   * retry with backoff (and irrevocable after the last) and throws an upstream failure; `force` forgets it regardless.
   * A process that does not bundle the lease's backend (in AWS, each family is its own function) hands the
   * revocation to its engine: the lease is queued as due now on its engine's queue, and the engine's function
   * revokes it at once when it can be asked (`LeaseManagerDeps.askEngine`), else the engine's job at its next run.
   */
  async revoke(leaseId: string, options: { force?: boolean } = {}): Promise<void> {
    const handedTo = await this.revokeOrHandOff(leaseId, options);
    if (handedTo) await this.askEngine(handedTo, { revokeLease: leaseId }, `lease ${leaseId}`);
  }

  /** Revokes the lease here, or hands it off to its engine and says which (its mount type). */
  private async revokeOrHandOff(leaseId: string, options: { force?: boolean }): Promise<string | undefined> {
    const lease = await this.claim(leaseId);
    if (!lease) return undefined;
    try {
      const { hooks, mount } = await this.hooksFor(lease);
      if (!mount) throw new Error('its mount no longer exists');
      if (!options.force && !this.deps.bundles(mount.type)) {
        await this.handOff(lease);
        return mount.type;
      }
      if (!hooks) throw new Error(`the ${mount.type} backend has no revoke hook for "${lease.secretType}"`);
      await hooks.revoke(this.context(lease, mount, 0));
    } catch (error) {
      if (!options.force) {
        await this.recordFailure(lease, error);
        throw upstreamFailure(`failed to revoke lease ${leaseId}: ${messageOf(error)}`);
      }
      this.log.error('lease force-revoked after its hook failed', { leaseId, error: messageOf(error) });
    }
    await this.forget(lease);
    return undefined;
  }

  /**
   * Where the engine's function can be asked (AWS), it revokes what was handed off now, as Vault does before
   * answering; if it cannot, the leases stay queued for the engine's job, and the caller hears so (an upstream failure).
   */
  private async askEngine(mountType: string, request: EngineRequest, what: string): Promise<void> {
    try {
      await this.deps.askEngine?.(mountType, request);
    } catch (error) {
      throw upstreamFailure(`failed to revoke ${what}: ${messageOf(error)}; it is queued for the ${mountType} job`);
    }
  }

  /**
   * Takes the lease for one revocation attempt, so overlapping sweeps and processes run its hook once. Undefined
   * when the lease is gone or another attempt holds it; a crashed attempt's claim lapses after `claimSeconds`.
   */
  private async claim(leaseId: string): Promise<LeaseItem | undefined> {
    const now = epochSeconds(this.clock);
    try {
      return await this.store.update<LeaseItem>(
        leaseKey(leaseId),
        { set: { revokingUntil: now + claimSeconds } },
        { when: unclaimed(now) },
      );
    } catch (error) {
      if (error instanceof ConditionFailed) return undefined;
      throw error;
    }
  }

  /** Revokes every lease under a prefix; reports the first failure after trying them all. */
  async revokePrefix(prefix: string, options: { force?: boolean } = {}): Promise<number> {
    const leases = await this.underPrefix(prefix);
    const failures: string[] = [];
    const handedTo = new Set<string>();
    for (const lease of leases) {
      try {
        const engine = await this.revokeOrHandOff(lease.leaseId, options);
        if (engine) handedTo.add(engine);
      } catch (error) {
        failures.push(messageOf(error));
      }
    }
    // One request per engine for all it was handed, not one per lease.
    for (const engine of handedTo) {
      await this.askEngine(engine, { revokePrefix: prefix }, `the ${engine} leases under ${prefix}`).catch(
        (error: unknown) => {
          failures.push(messageOf(error));
        },
      );
    }
    if (failures.length > 0)
      throw upstreamFailure(`${failures.length} of ${leases.length} leases could not be revoked: ${failures[0]}`);
    return leases.length;
  }

  /** Vault's reading of a prefix: one lease id, else a path, so `rec` means `rec/…` and never `rec2/…`. */
  private async underPrefix(prefix: string): Promise<LeaseItem[]> {
    if (prefix.endsWith('/')) return this.under(prefix);
    const exact = await this.get(prefix);
    return exact ? [exact] : this.under(`${prefix}/`);
  }

  /** Releases the claim and queues the lease as due now on its engine's queue, for the job that has the hook. */
  private async handOff(lease: LeaseItem): Promise<void> {
    await this.store
      .update(
        leaseKey(lease.leaseId),
        {
          copy: { duePk: 'queue' },
          set: { dueSk: dueKey(epochSeconds(this.clock), `lease#${lease.leaseId}`) },
          remove: ['revokingUntil'],
        },
        { when: { exists: true } },
      )
      .catch((error) => {
        if (!(error instanceof ConditionFailed)) throw error;
      });
  }

  /** Queues a lease for the sweep to revoke right away (Vault's `sync=false`). */
  async revokeLater(leaseId: string): Promise<void> {
    await this.store.update(
      leaseKey(leaseId),
      // Also back into the queue if it had left it as irrevocable: asking again is how an operator retries.
      { copy: { duePk: 'queue' }, set: { dueSk: dueKey(epochSeconds(this.clock), `lease#${leaseId}`) } },
      { when: { exists: true } },
    );
  }

  private async recordFailure(lease: LeaseItem, error: unknown): Promise<void> {
    const attempts = lease.revocationAttempts + 1;
    const now = epochSeconds(this.clock);
    const irrevocable = attempts >= maxRevocationAttempts;
    this.log.error(irrevocable ? 'lease is irrevocable' : 'lease revocation failed; will retry', {
      leaseId: lease.leaseId,
      attempts,
      error: messageOf(error),
    });
    const recorded = { revocationAttempts: attempts, lastRevocationError: messageOf(error).slice(0, 500) };
    await this.store
      .update(
        leaseKey(lease.leaseId),
        irrevocable
          ? { set: { ...recorded, irrevocable: true }, remove: ['duePk', 'dueSk', 'expiresAt', 'revokingUntil'] }
          : {
              set: { ...recorded, dueSk: dueKey(now + 10 * 2 ** (attempts - 1), `lease#${lease.leaseId}`) },
              remove: ['revokingUntil'],
            },
        { when: { exists: true } },
      )
      .catch((failure) => {
        if (!(failure instanceof ConditionFailed)) throw failure;
      });
  }

  /**
   * Puts back a lease that DynamoDB's TTL deleted before the sweep revoked it, queued as due now. False when it
   * was revoked already or is back already: the stream delivered the same removal again (a retried batch).
   */
  async restore(item: LeaseItem): Promise<boolean> {
    const { expiresAt: _expiresAt, revokingUntil: _revokingUntil, ...rest } = item;
    // Back in its shard (a lease from before sharding moves there), queued as due now.
    const queue = rest.queue.includes('#') ? rest.queue : shardedQueue(rest.queue, item.leaseId);
    const restored = {
      ...rest,
      ...leaseKey(item.leaseId),
      queue,
      duePk: queue,
      dueSk: dueKey(epochSeconds(this.clock), `lease#${item.leaseId}`),
    };
    try {
      await this.store.transact([
        { check: { pk: revokedPk(item.leaseId), sk: item.leaseId }, when: { absent: true } },
        { put: restored, when: { absent: true } },
      ]);
      return true;
    } catch (error) {
      if (error instanceof ConditionFailed) return false;
      throw error;
    }
  }

  /** Deletes a revoked lease, leaving a tombstone for a while so `restore` can tell a replayed stream record. */
  private async forget(lease: LeaseItem): Promise<void> {
    await this.store.transact([
      { delete: leaseKey(lease.leaseId) },
      { put: tombstone(lease.leaseId, epochSeconds(this.clock) + tombstoneSeconds) },
    ]);
    if (lease.tokenHash) await forgetOwnedLease(this.store, lease.tokenHash, lease.leaseId);
  }

  private async hooksFor(lease: LeaseItem): Promise<{ hooks: LeaseRunner | undefined; mount: MountEntry | undefined }> {
    const mount = await this.deps.mounts.byUuid(lease.mountUuid);
    const hooks = mount ? this.deps.hooks(mount, lease.secretType, this) : undefined;
    return { hooks, mount };
  }

  private context(lease: LeaseItem, mount: MountEntry, increment: number): LeaseRecord {
    return {
      leaseId: lease.leaseId,
      internal: JSON.parse(this.keyring.open(lease.internal, `leases|${lease.leaseId}`)) as Record<string, unknown>,
      increment,
      mount,
    };
  }
}

/**
 * A lease's id: where the secret was issued, then a unique suffix, random unless the backend chose it
 * (`leaseSuffix` of `Reply['secret']`, to know the id before the lease exists).
 */
export const leaseIdFor = (mount: MountEntry, requestPath: string, suffix = randomBase62(24)) =>
  `${mount.path}${requestPath.replace(/\/+$/, '')}/${suffix}`;
export const leaseNotFound = () => notFound('lease not found');
/**
 * In a queue of its own (no job reads it) only because DynamoDB Local's TTL skips items without the index keys;
 * sharded like the leases, as a storm writes one per revocation.
 */
const tombstone = (leaseId: string, until: number): Item => ({
  pk: revokedPk(leaseId),
  sk: leaseId,
  expiresAt: until,
  duePk: shardKey('tombstones', leaseId),
  dueSk: dueKey(until, `lease#${leaseId}`),
});
/**
 * A lease someone asked to revoke (queued before its expiry for the sweep, or whose revocation failed so far) is on
 * its way out: no more renewals, which would move it back to its expiry in the queue.
 */
const renewable = (lease: LeaseItem) =>
  lease.renewable && !lease.irrevocable && lease.revocationAttempts === 0 && !queuedForRevocation(lease);
const queuedForRevocation = (lease: LeaseItem) =>
  typeof lease.dueSk === 'string' && lease.dueSk < dueKey(lease.expireTime, `lease#${lease.leaseId}`);
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
