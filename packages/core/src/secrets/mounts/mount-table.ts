import { type Clock, epochSeconds } from '../../lib/clock.ts';
import { badRequest, notFound } from '../../lib/errors.ts';
import { randomBase62, uuid } from '../../lib/random.ts';
import { allShards, shardKey } from '../../storage/due.ts';
import { itemKind } from '../../storage/item-mac.ts';
import { ConditionFailed, type Store, type Write } from '../../storage/store.ts';
import { refuseOperatorOptions } from './operator-settings.ts';

export type MountTableName = 'secret' | 'auth';

export interface MountConfig {
  defaultLeaseTtl: number;
  maxLeaseTtl: number;
  /**
   * Vault's `listing_visibility`: `unauth` lists the mount (type and description only) in `sys/internal/ui/mounts`
   * to callers without a token, so a sign-in page can offer it; "" (the default) and `hidden` do not.
   */
  listingVisibility?: ListingVisibility;
}

export const listingVisibilities = ['', 'unauth', 'hidden'] as const;
export type ListingVisibility = (typeof listingVisibilities)[number];

/** Refuses a `listing_visibility` that is not one of Vault's three values, naming it. */
export function checkListingVisibility(value: string | undefined): ListingVisibility | undefined {
  if (value === undefined) return undefined;
  if (!(listingVisibilities as readonly string[]).includes(value)) {
    throw badRequest(`invalid listing_visibility ${JSON.stringify(value)}: use "unauth", "hidden" or "" (the default)`);
  }
  return value as ListingVisibility;
}

export interface MountEntry {
  /** Full routing path with trailing slash: `ldap/`, `auth/jwt/`. */
  path: string;
  table: MountTableName;
  type: string;
  uuid: string;
  accessor: string;
  description: string;
  config: MountConfig;
  options: Record<string, string>;
  local: boolean;
  sealWrap: boolean;
  /** Built-in mounts (`sys/`, `auth/token/`) cannot be disabled or moved. */
  builtin?: boolean;
  /**
   * Being disabled by a process that does not bundle its backend: no longer routed or listed, its leases queued
   * for the sweep, which removes the mount once they are gone (see `disable-mount.ts`).
   */
  disabling?: boolean;
}

/** One mount as enabled: its path, and the uuid that tells it from a later mount at the same path. */
export type MountRef = Pick<MountEntry, 'path' | 'uuid'>;

/** The built-in token store (`auth/token/`): never stored, never disabled, so always in service. */
export const tokenStoreMount: MountRef = { path: 'auth/token/', uuid: 'token' };

/** Vault's system-wide defaults: 32 days. A mount's 0 means "use the system value". */
export const systemMaxTtl = 768 * 3600;

const builtins: MountEntry[] = [
  {
    path: 'sys/',
    table: 'secret',
    type: 'system',
    uuid: 'system',
    accessor: 'system_builtin',
    description: 'system endpoints used for control, policy and debugging',
    config: { defaultLeaseTtl: 0, maxLeaseTtl: 0 },
    options: {},
    local: false,
    sealWrap: false,
    builtin: true,
  },
  {
    path: 'identity/',
    table: 'secret',
    type: 'identity',
    uuid: 'identity',
    accessor: 'identity_builtin',
    description: 'identity store: plugin identity token keys',
    config: { defaultLeaseTtl: 0, maxLeaseTtl: 0 },
    options: {},
    local: false,
    sealWrap: false,
    builtin: true,
  },
  {
    path: 'auth/token/',
    table: 'auth',
    type: 'token',
    uuid: 'token',
    accessor: 'auth_token_builtin',
    description: 'token based credentials',
    config: { defaultLeaseTtl: 0, maxLeaseTtl: 0 },
    options: {},
    local: false,
    sealWrap: false,
    builtin: true,
  },
];

/** The built-in mounts' types with their fixed paths (no trailing slash): `system` at `sys`, `token` at `auth/token`… */
export const builtinMountPaths: ReadonlyMap<string, string> = new Map(
  builtins.map((entry) => [entry.type, entry.path.replace(/\/$/, '')]),
);

const reservedPrefixes = ['sys/', 'auth/', 'cubbyhole/', 'identity/'];

/** A mount item is authenticated whole (`storage/item-mac.ts`): a forged, moved or MAC-less mount is not in the table. */
export const mountKind = itemKind('mount', [], { epoch: 'init' });

/** Normalises a user-given mount path: no leading slash, one trailing slash, no empty or dot segments. */
export function normaliseMountPath(raw: string): string {
  const trimmed = raw.replace(/^\/+/, '').replace(/\/+$/, '');
  if (trimmed === '') throw badRequest('mount path must not be empty');
  if (trimmed.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')) {
    throw badRequest(`invalid mount path "${raw}"`);
  }
  if (!/^[\w.\-/]+$/.test(trimmed))
    throw badRequest(`invalid mount path "${raw}": use letters, digits, "-", "_", "." and "/"`);
  return `${trimmed}/`;
}

/**
 * The mount table lives in the table (`pk = mounts`) and is cached per process for a few seconds:
 * writes here are seen at once by this process and within `cacheSeconds` by every other one.
 */
export class MountTable {
  private cache: { entries: MountEntry[]; loadedAt: number } | undefined;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly knownTypes: (table: MountTableName) => string[],
    private readonly cacheSeconds: number,
    /**
     * In AWS, the stage's mounts (full path -> type): only these have routes to a function, so only these may
     * be enabled. Their types count as known even in a function that does not bundle that family.
     */
    private readonly declared?: ReadonlyArray<{ path: string; type: string }>,
  ) {}

  /** The mounts in service: a mount being disabled is gone for routing, listing and lookups. */
  async list(table?: MountTableName): Promise<MountEntry[]> {
    return (await this.entries()).filter((entry) => !entry.disabling && (!table || entry.table === table));
  }
  /** Reads the table again at the next use (a new initialisation, whose epoch the cached mounts do not carry). */
  forget(): void {
    this.cache = undefined;
  }

  /** The mount a lease was issued under, also while it is being disabled (its leases still need revoking). */
  async byUuid(uuid: string): Promise<MountEntry | undefined> {
    const cached = (await this.entries()).find((entry) => entry.uuid === uuid);
    if (cached) return cached;
    // Perhaps enabled by another process since this one's cache was loaded.
    this.cache = undefined;
    return (await this.entries()).find((entry) => entry.uuid === uuid);
  }

  /**
   * Whether a mount is in service as this process knows it: a disable made here counts at once, one made elsewhere
   * within `cacheSeconds`, as for routing. A mount not in the cache may be new: the cache is read again once.
   */
  async inService(mount: MountRef): Promise<boolean> {
    const known = (entries: MountEntry[]) => entries.some((entry) => entry.uuid === mount.uuid && !entry.disabling);
    if (known(await this.entries())) return true;
    if ((await this.entries()).some((entry) => entry.uuid === mount.uuid)) return false;
    this.cache = undefined;
    return known(await this.entries());
  }

  /** Mounts marked `disabling`, read from the table rather than the cache: the sweep finishes them. */
  async disabling(): Promise<MountEntry[]> {
    const stored = await this.store.list('mounts');
    return stored
      .filter((item) => this.store.verified(mountKind, item))
      .map((item) => item.entry as MountEntry)
      .filter((entry) => entry.disabling);
  }

  private async entries(): Promise<MountEntry[]> {
    const now = this.clock.now();
    if (!this.cache || now - this.cache.loadedAt > this.cacheSeconds * 1000) {
      const stored = (await this.store.list('mounts')).filter((item) => this.store.verified(mountKind, item));
      this.cache = { entries: [...builtins, ...stored.map((item) => item.entry as MountEntry)], loadedAt: now };
    }
    return this.cache.entries;
  }

  /** The mount that serves `path` (longest prefix wins). */
  async resolve(path: string): Promise<MountEntry | undefined> {
    let best: MountEntry | undefined;
    for (const entry of await this.list()) {
      const matches = path === entry.path.slice(0, -1) || path.startsWith(entry.path);
      if (matches && (!best || entry.path.length > best.path.length)) best = entry;
    }
    return best;
  }

  async find(table: MountTableName, relativePath: string): Promise<MountEntry | undefined> {
    const full = fullPath(table, normaliseMountPath(relativePath));
    return (await this.list()).find((entry) => entry.path === full);
  }

  async enable(
    table: MountTableName,
    relativePath: string,
    settings: {
      type: string;
      description?: string;
      config?: Partial<MountConfig>;
      options?: Record<string, string>;
      local?: boolean;
      sealWrap?: boolean;
    },
  ): Promise<MountEntry> {
    const path = fullPath(table, normaliseMountPath(relativePath));
    refuseOperatorOptions(settings.options);
    const listingVisibility = checkListingVisibility(settings.config?.listingVisibility);
    if (table === 'secret' && reservedPrefixes.some((prefix) => path.startsWith(prefix))) {
      throw badRequest(`cannot mount at "${relativePath}": the path is reserved`);
    }
    const builtin = builtins.find((entry) => entry.type === settings.type);
    if (builtin) throw badRequest(`cannot mount type "${settings.type}": it exists only once, at ${builtin.path}`);
    const mountable = this.knownTypes(table).filter((type) => !builtins.some((entry) => entry.type === type));
    if (this.declared) {
      const routed = this.declared.find((mount) => mount.path === path);
      if (!routed || routed.type !== settings.type) {
        throw badRequest(
          `mount "${path}" of type ${settings.type} is not declared for this stage; add it to stacks/stage-config.ts and deploy`,
        );
      }
    } else if (!mountable.includes(settings.type)) {
      throw badRequest(
        `unknown ${table === 'auth' ? 'auth method' : 'secrets engine'} type "${settings.type}"; available: ${mountable.join(', ')}`,
      );
    }
    this.cache = undefined;
    // A mount still being disabled holds its path until the sweep removes it.
    const clash = (await this.entries()).find((entry) => entry.path.startsWith(path) || path.startsWith(entry.path));
    if (clash) throw badRequest(`path is already in use at ${clash.path}`);
    const entry: MountEntry = {
      path,
      table,
      type: settings.type,
      uuid: uuid(),
      accessor: `${table === 'auth' ? 'auth' : settings.type}_${settings.type}_${randomBase62(8).toLowerCase()}`,
      description: settings.description ?? '',
      config: {
        defaultLeaseTtl: settings.config?.defaultLeaseTtl ?? 0,
        maxLeaseTtl: settings.config?.maxLeaseTtl ?? 0,
        ...(listingVisibility ? { listingVisibility } : {}),
      },
      options: settings.options ?? {},
      local: settings.local ?? false,
      sealWrap: settings.sealWrap ?? false,
    };
    checkTtls(entry.config);
    try {
      await this.store.put(this.store.signed(mountKind, { pk: 'mounts', sk: path, entry }), { when: { absent: true } });
    } catch (error) {
      if (error instanceof ConditionFailed) throw badRequest(`path is already in use at ${path}`);
      throw error;
    }
    this.cache = undefined;
    return entry;
  }

  async tune(
    entry: MountEntry,
    changes: Partial<MountConfig> & { description?: string; options?: Record<string, string> },
  ): Promise<MountEntry> {
    if (entry.builtin) throw badRequest(`cannot tune the built-in mount ${entry.path}`);
    refuseOperatorOptions(changes.options);
    const listingVisibility = checkListingVisibility(changes.listingVisibility);
    const config: MountConfig = {
      ...entry.config,
      ...definedOnly({ defaultLeaseTtl: changes.defaultLeaseTtl, maxLeaseTtl: changes.maxLeaseTtl }),
    };
    if (listingVisibility !== undefined) {
      if (listingVisibility) config.listingVisibility = listingVisibility;
      else delete config.listingVisibility;
    }
    checkTtls(config);
    const updated: MountEntry = {
      ...entry,
      config,
      description: changes.description ?? entry.description,
      options: changes.options ? { ...entry.options, ...changes.options } : entry.options,
    };
    try {
      // Not over a mount another process has begun disabling since this one's cache was loaded.
      await this.store.put(this.store.signed(mountKind, { pk: 'mounts', sk: entry.path, entry: updated }), {
        when: { exists: true, missing: ['entry.disabling'] },
      });
    } catch (error) {
      if (error instanceof ConditionFailed) throw notFound(`no mount at "${entry.path}"`);
      throw error;
    }
    this.cache = undefined;
    return updated;
  }

  async remove(entry: MountEntry): Promise<void> {
    await this.store.delete({ pk: 'mounts', sk: entry.path });
    this.cache = undefined;
  }

  /**
   * Takes the mount out of service for good; the sweep removes it (`removeDisabled`) once its leases are revoked.
   * In the same transaction every in-service marker of the mount is set (`inServiceCheck`), so a login that checks
   * its marker either committed before this (its token is in the issued index the disabling reads next) or fails.
   */
  async markDisabling(entry: MountEntry): Promise<MountEntry> {
    const marked: MountEntry = { ...entry, disabling: true };
    // A marker outlives any process's cached mount table (seconds) by far; then the table's TTL takes it.
    const expiresAt = epochSeconds(this.clock) + markerLifetimeSeconds;
    await this.store.transact([
      {
        put: this.store.signed(mountKind, { pk: 'mounts', sk: entry.path, entry: marked }),
        when: { exists: true, equals: { 'entry.uuid': entry.uuid } },
      },
      ...inServiceMarkers(entry).map((key) => ({ put: { ...key, disabling: true, expiresAt } })),
    ]);
    this.cache = undefined;
    return marked;
  }

  /** Removes a mount marked `disabling`; false when it is gone already (another sweep finished it). */
  async removeDisabled(entry: MountEntry): Promise<boolean> {
    try {
      await this.store.delete(
        { pk: 'mounts', sk: entry.path },
        { when: { equals: { 'entry.disabling': true, 'entry.uuid': entry.uuid } } },
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionFailed) return false;
      throw error;
    }
  }
}

/** Whether the mount is still in service (not disabled, being disabled or replaced), read from the table. */
export async function storedInService(store: Store, mount: MountRef): Promise<boolean> {
  const entry = (await store.getVerified(mountKind, 'mounts', mount.path))?.entry as MountEntry | undefined;
  return entry !== undefined && entry.uuid === mount.uuid && !entry.disabling;
}

/**
 * The same as a transaction's condition, for a write that needs the mount in service (a login's token): it fails
 * once the mount is being disabled, or replaced. It checks one of the mount's 16 in-service markers (the shard of
 * `id`, the token's hash), not the mount's entry: DynamoDB cancels concurrent transactions that touch one item
 * (TransactionConflict), so one checked item per mount would let a single auth method take only one login at a time.
 * A marker exists only once `markDisabling` sets it; until then the check finds no item and passes.
 */
export function inServiceCheck(mount: MountRef, id: string): Write {
  return { check: inServiceMarker(mount, id), when: { missing: ['disabling'] } };
}

const markerLifetimeSeconds = 86_400;
const markerPk = (mount: MountRef) => `in-service#${mount.uuid}`;
const inServiceMarker = (mount: MountRef, id: string) => ({ pk: shardKey(markerPk(mount), id), sk: 'marker' });
const inServiceMarkers = (mount: MountRef) =>
  allShards(markerPk(mount))
    .slice(1)
    .map((pk) => ({ pk, sk: 'marker' }));

export const fullPath = (table: MountTableName, path: string) => (table === 'auth' ? `auth/${path}` : path);

/** Effective TTLs for a mount: its own values, else the system's. */
export function mountTtls(entry: MountEntry): { defaultTtl: number; maxTtl: number } {
  const maxTtl = entry.config.maxLeaseTtl || systemMaxTtl;
  return { defaultTtl: Math.min(entry.config.defaultLeaseTtl || systemMaxTtl, maxTtl), maxTtl };
}

function checkTtls(config: MountConfig): void {
  if (config.maxLeaseTtl > 0 && config.defaultLeaseTtl > config.maxLeaseTtl) {
    throw badRequest('default_lease_ttl must not be greater than max_lease_ttl');
  }
  if (config.maxLeaseTtl > systemMaxTtl)
    throw badRequest(`max_lease_ttl must not exceed the system maximum of ${systemMaxTtl}s`);
  if (config.defaultLeaseTtl > systemMaxTtl)
    throw badRequest(`default_lease_ttl must not exceed the system maximum of ${systemMaxTtl}s`);
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
