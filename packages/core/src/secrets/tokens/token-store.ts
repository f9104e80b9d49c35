import { createCipheriv, createDecipheriv, createSecretKey, hash, type KeyObject } from 'node:crypto';
import { type Clock, epochSeconds } from '../../lib/clock.ts';
import { badRequest } from '../../lib/errors.ts';
import { randomBase62, randomBytes } from '../../lib/random.ts';
import { allShards, dueKey, shardedQueue, shardKey, ttlBackstop } from '../../storage/due.ts';
import { itemKind } from '../../storage/item-mac.ts';
import type { Keyring } from '../../storage/keyring.ts';
import {
  type Change,
  type Condition,
  ConditionFailed,
  type Item,
  type Store,
  type Write,
} from '../../storage/store.ts';
import { inServiceCheck, type MountRef, storedInService, tokenStoreMount } from '../mounts/mount-table.ts';
import { authMethodsCannotCreateRoot, sanitisePolicyNames } from '../policies/policy-names.ts';
import { isRootEntry, type TokenEntry } from './token-entry.ts';

export interface NewToken {
  policies: string[];
  noDefaultPolicy: boolean;
  displayName: string;
  meta: Record<string, string>;
  /** Requested TTL; 0 means the mount default. */
  ttl: number;
  explicitMaxTtl: number;
  period: number;
  numUses: number;
  renewable: boolean;
  type: 'service' | 'batch';
  path: string;
  entityId: string;
  boundCidrs: string[];
  parent: TokenEntry | undefined;
  /** The auth mount's effective default and max TTL. */
  mountDefaultTtl: number;
  mountMaxTtl: number;
  /** The token role it comes from (`auth/token/create/<role>`). */
  role?: string;
  /** A caller-chosen token value (root only, as in Vault). */
  id?: string;
  /** The auth method that issues it (a login's, or the token store): it indexes the token; its disabling revokes it. */
  issuer?: MountRef;
  /**
   * Who asks for the token through the token store: the calling token (also for an orphan, whose `parent` is
   * undefined), or `initialisation` for the first root token (`sys/init`). Only a root creator or initialisation
   * may mint a token carrying `root`, and only through the token store: never an auth method's login.
   */
  creator?: TokenEntry | 'initialisation';
}

const tokenPk = (hash: string) => `token#${hash}`;

/** A token a revocation has marked: its item as marked, what its partition held, and its children's hashes. */
interface MarkedToken {
  hash: string;
  marked: Item | undefined;
  refs: Item[];
  children: string[];
}

/** How many tokens of a tree a revocation works on at once (each step is one or two table calls). */
const revocationConcurrency = 32;

/**
 * `work` over every item, at most `revocationConcurrency` at a time; the results in order. (A dozen lines: the
 * libraries that do this, p-limit and p-map, are not among the core's dependencies, and a Lambda bundles each one.)
 */
async function eachLimited<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const at = next++;
      results[at] = await work(items[at] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(revocationConcurrency, items.length) }, worker));
  return results;
}
/**
 * A token item is authenticated (`storage/item-mac.ts`): all of it but the bookkeeping DynamoDB updates in place.
 * `numUses` counts down atomically, so it is bounded instead: `usesGranted` (covered) is the count it was created
 * with, and a read refuses a count outside 1..usesGranted (0, "unlimited", most of all).
 */
export const tokenKind = itemKind('token', ['numUses', 'lastRenewalTime', 'revoking', 'duePk', 'dueSk', 'expiresAt'], {
  epoch: 'init',
});
/** The expiry queue partition of a token: `expiry` sharded by its hash (see `storage/due.ts`). */
export const tokenQueue = (hash: string) => shardedQueue('expiry', hash);
const accessorPk = (accessor: string) => `accessor#${accessor}`;
/**
 * A service token's place in the index of the tokens its auth method issued (`pk = issued#<mount uuid>#<shard>`,
 * the shard a hash of the token's hash, see `storage/due.ts`, so a login storm on one mount spreads over 16
 * partitions): its login path then its hash, so one query per shard finds a mount's tokens, or those under a path,
 * without a scan. Readers query every shard (`issuedShards`) and the bare key, where tokens from before sharding sit.
 */
export const issuedPk = (issuer: MountRef, hash: string) => shardKey(`issued#${issuer.uuid}`, hash);
const issuedKey = (issuer: MountRef, entry: TokenEntry) => ({
  pk: issuedPk(issuer, entry.hash),
  sk: `${entry.path}/${entry.hash}`,
});
const issuedShards = (issuer: MountRef) => allShards(`issued#${issuer.uuid}`);

/**
 * Service tokens are stored only as keyed hashes (`pk = token#<hash>`), beside refs to their children and
 * leases in the same partition so revocation reads one partition; a token from a login is also indexed under
 * its auth method (`issuedKey`). Batch tokens are sealed into themselves.
 */
export class TokenStore {
  constructor(
    private readonly store: Store,
    private readonly keyring: Keyring,
    private readonly clock: Clock,
    /** Whether a login's auth method is still in service (the mount table's cached answer, no table read). */
    private readonly authMethodInService: (mount: MountRef) => Promise<boolean>,
    /**
     * Revokes one lease a revoked token owned (the lease manager's; tokens own leases, leases do not know about
     * tokens' trees). A failure leaves the lease to its own retries; the token's revocation goes on.
     */
    readonly revokeLease: (leaseId: string) => Promise<void> = async () => {},
  ) {}

  /** The batch-token key as a KeyObject, made once: a raw key is type-checked again on every cipher. */
  private batchKeyObject?: KeyObject;
  private get batchKey(): KeyObject {
    this.batchKeyObject ??= createSecretKey(this.keyring.tokenKey);
    return this.batchKeyObject;
  }

  async create(request: NewToken): Promise<{ token: string; entry: TokenEntry }> {
    const now = epochSeconds(this.clock);
    const requested = sanitisePolicyNames(request.policies);
    const isRoot = requested.includes('root');
    if (isRoot) refuseRootUnlessRootAsks(request);
    const policies = isRoot ? ['root'] : withDefault(requested, request.noDefaultPolicy);
    const ttl = effectiveTtl(request, isRoot);
    const { issuer } = request;
    const entry: TokenEntry = {
      hash: '',
      accessor: request.type === 'batch' ? '' : randomBase62(24),
      policies,
      ...(request.parent && request.parent.type === 'service' ? { parentHash: request.parent.hash } : {}),
      displayName: request.displayName,
      meta: request.meta,
      numUses: request.numUses,
      creationTime: now,
      creationTtl: ttl,
      expireTime: ttl ? now + ttl : 0,
      explicitMaxTtl: request.explicitMaxTtl,
      period: request.period,
      renewable: request.type === 'batch' ? false : request.renewable && ttl > 0,
      type: request.type,
      path: request.path,
      ...(issuer ? { issuer } : {}),
      entityId: request.entityId,
      orphan: !request.parent,
      boundCidrs: request.boundCidrs,
      ...(request.role ? { role: request.role } : {}),
    };
    if (request.type === 'batch') return { token: this.sealBatch(entry), entry };

    const token = request.id ?? `hvs.${randomBase62(24)}`;
    entry.hash = this.keyring.hash(token);
    const writes: Write[] = [
      { put: this.store.signed(tokenKind, this.item(entry)), when: { absent: true } },
      { put: { pk: accessorPk(entry.accessor), sk: 'accessor', tokenHash: entry.hash } },
    ];
    // Indexed with the mount's check in one write: a login racing the mount's disabling either fails here or is
    // in the index before the disabling process reads it. The token store itself is never disabled.
    if (issuer) writes.push({ put: { ...issuedKey(issuer, entry), tokenHash: entry.hash, accessor: entry.accessor } });
    if (issuer && !isTokenStore(issuer)) writes.push(inServiceCheck(issuer, entry.hash));
    if (entry.parentHash) {
      writes.push(
        { put: { pk: tokenPk(entry.parentHash), sk: `child#${entry.hash}` } },
        { check: { pk: tokenPk(entry.parentHash), sk: 'token' }, when: { exists: true, missing: ['revoking'] } },
      );
    }
    try {
      await this.store.transact(writes);
    } catch (error) {
      if (error instanceof ConditionFailed) {
        if (issuer && !isTokenStore(issuer) && !(await storedInService(this.store, issuer))) throw authMethodDisabled();
        throw badRequest('cannot create the token: its id is taken or its parent was revoked');
      }
      throw error;
    }
    return { token, entry };
  }

  /** The live token behind a token string, or undefined when unknown, expired, revoked or malformed. */
  async lookup(token: string): Promise<TokenEntry | undefined> {
    const plan = this.lookupPlan(token);
    return plan.entry(plan.key && (await this.store.get(plan.key.pk, plan.key.sk)));
  }

  async lookupHash(hash: string): Promise<TokenEntry | undefined> {
    return this.entryOf(await this.store.get(tokenPk(hash), 'token'));
  }

  /**
   * A token's lookup in two steps, so a request can read the one item it needs with its data in one round trip:
   * `key` names that item (a service token's own, a child batch token's parent's, as a batch token dies with its
   * parent; none for an orphan batch token), and `entry` gives the token's entry from the item as read.
   */
  lookupPlan(token: string): {
    key?: { pk: string; sk: string };
    entry: (item: Item | undefined) => Promise<TokenEntry | undefined>;
  } {
    if (!token.startsWith('hvb.'))
      return { key: { pk: tokenPk(this.keyring.hash(token)), sk: 'token' }, entry: async (item) => this.entryOf(item) };
    const sealed = this.sealedEntry(token);
    return {
      ...(sealed?.parentHash ? { key: { pk: tokenPk(sealed.parentHash), sk: 'token' } } : {}),
      entry: async (item) => {
        if (!sealed || (sealed.parentHash && !this.entryOf(item))) return undefined;
        // Never stored, a batch token cannot be revoked with its auth method: it is refused once the method is
        // disabled (or being disabled), as in Vault, where it stops working with its mount. Answered from the mount
        // table's cache, so a disable made in another process counts within its `cacheSeconds`, as routing does.
        if (sealed.issuer && !(await this.authMethodInService(sealed.issuer))) return undefined;
        return sealed;
      },
    };
  }

  private entryOf(item: Item | undefined): TokenEntry | undefined {
    const verified = this.store.verified(tokenKind, item);
    return verified && this.live(verified) && usesWithinGrant(verified) ? toEntry(verified) : undefined;
  }

  async lookupAccessor(accessor: string): Promise<TokenEntry | undefined> {
    if (!/^[A-Za-z0-9]+$/.test(accessor)) return undefined;
    const ref = await this.store.get(accessorPk(accessor), 'accessor');
    // The accessor item is not authenticated; the token it points to is, and must name this accessor back.
    const entry = ref ? await this.lookupHash(ref.tokenHash as string) : undefined;
    return entry?.accessor === accessor ? entry : undefined;
  }

  /**
   * Counts one use of a limited-use token atomically; undefined when no use is left. The last use also marks
   * the token revoking (and due for the sweep) in the same write: its `numUses` of 0 would otherwise read as
   * "unlimited" to any request that looks it up before the revocation lands, or forever if that never runs.
   */
  async consumeUse(entry: TokenEntry): Promise<TokenEntry | undefined> {
    if (entry.numUses === 0 || entry.type === 'batch') return entry;
    const key = { pk: tokenPk(entry.hash), sk: 'token' };
    const attempts: Array<{ change: Change; when: Condition }> = [
      { change: { add: { numUses: -1 } }, when: { above: { numUses: 1 }, missing: ['revoking'] } },
      {
        change: {
          set: {
            numUses: 0,
            revoking: true,
            duePk: tokenQueue(entry.hash),
            dueSk: dueKey(epochSeconds(this.clock), `token#${entry.hash}`),
          },
        },
        when: { equals: { numUses: 1 }, missing: ['revoking'] },
      },
    ];
    for (const attempt of attempts) {
      try {
        const item = this.store.verified(
          tokenKind,
          await this.store.update(key, attempt.change, { when: attempt.when }),
        );
        return item ? toEntry(item) : undefined;
      } catch (error) {
        if (!(error instanceof ConditionFailed)) throw error;
      }
    }
    return undefined;
  }

  /** Extends a token's life by `increment` (or its creation TTL), within its limits. */
  /** `period` overrides the token's own (an auth method's role may have changed it since login). */
  async renew(
    entry: TokenEntry,
    increment: number,
    mountMaxTtl: number,
    period = entry.period,
  ): Promise<{ entry: TokenEntry; warnings: string[] }> {
    if (entry.type === 'batch') throw badRequest('batch tokens cannot be renewed');
    if (!entry.renewable) throw badRequest('lease is not renewable');
    const now = epochSeconds(this.clock);
    const warnings: string[] = [];
    // A periodic token escapes the mount max by renewing; only its explicit max ends it.
    let ttl = period ? Math.min(period, mountMaxTtl) : increment || entry.creationTtl;
    const maxTtl = period
      ? entry.explicitMaxTtl
      : Math.min(...[entry.explicitMaxTtl, mountMaxTtl].filter((cap) => cap > 0));
    if (maxTtl) {
      const left = entry.creationTime + maxTtl - now;
      if (left <= 0) throw badRequest('past the max TTL, cannot renew');
      if (ttl > left) {
        warnings.push(`TTL of "${ttl}s" exceeded the effective max_ttl of "${left}s"; TTL value is capped accordingly`);
        ttl = left;
      }
    }
    const expireTime = now + ttl;
    let renewed: Item | undefined;
    try {
      // Only the expiry (and the MAC that covers it) changes: a whole-item write would undo uses spent meanwhile.
      renewed = await this.updateCovered(
        entry.hash,
        (current) => ({ ...current, expireTime }),
        (mac) => ({
          set: {
            expireTime,
            lastRenewalTime: now,
            duePk: tokenQueue(entry.hash),
            dueSk: dueKey(expireTime, `token#${entry.hash}`),
            expiresAt: ttlBackstop(expireTime),
            mac,
          },
        }),
        { exists: true, missing: ['revoking'] },
      );
      if (!renewed) throw badRequest('token was revoked');
    } catch (error) {
      if (error instanceof ConditionFailed) throw badRequest('token was revoked');
      throw error;
    }
    return { entry: renewed ? toEntry(renewed) : { ...entry, expireTime, lastRenewalTime: now }, warnings };
  }

  /**
   * Revokes a token with its leases and (unless `orphanChildren`) its whole subtree, as Vault does: once this
   * resolves, no token of the tree is usable. First every token of the tree is marked revoking (dead to every lookup)
   * and put at the head of the due queue, breadth-first, `revocationConcurrency` tokens at a time; then each one's
   * leases, references and item go, in parallel too. Revoking a token with 1,500 children so waits on 195 table
   * round trips one after another instead of 6,045 (`test/attacks/wide-token-tree.test.ts`; issue 39: the walk one
   * by one took 29–35 s on DynamoDB, past the function's 29 s, and the children not yet reached kept working). If this
   * process dies anywhere in between, every marked token is due and the sweep finishes it. False when there is no
   * such token (revoked already).
   */
  async revoke(hash: string, options: { orphanChildren?: boolean } = {}): Promise<boolean> {
    const now = epochSeconds(this.clock);
    const root = await this.markRevoking(hash, now);
    if (!root) return false;
    const tree = [root];
    if (!options.orphanChildren) {
      for (let level = [root]; level.length > 0; ) {
        const children = level.flatMap((node) => node.children);
        level = (await eachLimited(children, (child) => this.markRevoking(child, now))).filter(
          (node): node is MarkedToken => node !== undefined,
        );
        tree.push(...level);
      }
    } else {
      await eachLimited(root.children, (child) => this.orphan(child));
    }
    await eachLimited(tree, (node) => this.removeRevoked(node));
    return true;
  }

  /** Marks a token revoking and due now, then reads what its partition holds (its children and leases); undefined when there is no such token. */
  private async markRevoking(hash: string, now: number): Promise<MarkedToken | undefined> {
    let marked: Item | undefined;
    try {
      marked = await this.store.update(
        { pk: tokenPk(hash), sk: 'token' },
        { set: { revoking: true, duePk: tokenQueue(hash), dueSk: dueKey(now, `token#${hash}`) } },
        { when: { exists: true } },
      );
    } catch (error) {
      if (error instanceof ConditionFailed) return undefined;
      throw error;
    }
    // Listed after the mark: a child made before it is listed, and none can be made after it (`create` checks).
    const refs = (await this.store.list(tokenPk(hash))).filter((ref) => ref.sk !== 'token');
    const children = refs.filter((ref) => ref.sk.startsWith('child#')).map((ref) => ref.sk.slice('child#'.length));
    return { hash, marked, refs, children };
  }

  /** A marked token's leases revoked, then its references, its index entries and, last, its item deleted. */
  private async removeRevoked({ hash, marked, refs }: MarkedToken): Promise<void> {
    for (const ref of refs) {
      if (ref.sk.startsWith('lease#')) await this.revokeLease(ref.sk.slice('lease#'.length));
    }
    // A forged item is still revoked, but its attributes name nothing else to delete.
    const verified = this.store.verified(tokenKind, marked);
    const entry = verified ? toEntry(verified) : undefined;
    const extras = [
      ...(entry?.accessor ? [{ pk: accessorPk(entry.accessor), sk: 'accessor' }] : []),
      ...(entry?.parentHash ? [{ pk: tokenPk(entry.parentHash), sk: `child#${hash}` }] : []),
      ...(entry?.issuer ? [issuedKey(entry.issuer, entry)] : []),
    ];
    // The token item goes last: until it is gone, the sweep can still find and finish this revocation.
    await Promise.all([...refs.map(({ pk, sk }) => ({ pk, sk })), ...extras].map((key) => this.store.delete(key)));
    await this.store.delete({ pk: tokenPk(hash), sk: 'token' });
  }

  /**
   * Revokes, as `revoke` does, the service tokens an auth method issued: all of them, or those whose login path
   * is under `under` (ending in `/`). Each index item goes with its token, so a crash leaves the rest to a retry.
   */
  async revokeIssued(issuer: MountRef, under = ''): Promise<number> {
    const issued = (await Promise.all(issuedShards(issuer).map((pk) => this.store.list(pk, { prefix: under })))).flat();
    for (const item of issued) {
      // An index item outliving its token (one deleted some other way) must not keep the mount from finishing.
      if (!(await this.revoke(item.tokenHash as string))) await this.store.delete({ pk: item.pk, sk: item.sk });
    }
    return issued.length;
  }

  /** The accessors of the service tokens these auth methods issued (`auth/token/accessors`), sorted. */
  async accessorsIssued(issuers: MountRef[]): Promise<string[]> {
    const issued = await Promise.all(issuers.flatMap(issuedShards).map((pk) => this.store.list(pk)));
    return issued
      .flat()
      .map((item) => item.accessor as string)
      .sort();
  }

  /** Records a lease as owned by a token, so revoking the token revokes the lease. */
  ownLeaseWrite(tokenHash: string, leaseId: string): Write {
    return ownLeaseWrite(tokenHash, leaseId);
  }

  forgetLease(tokenHash: string, leaseId: string): Promise<unknown> {
    return forgetOwnedLease(this.store, tokenHash, leaseId);
  }

  private async orphan(hash: string): Promise<void> {
    try {
      await this.updateCovered(
        hash,
        ({ parentHash: _parentHash, ...current }) => ({ ...current, orphan: true }) as Item,
        (mac) => ({ set: { orphan: true, mac }, remove: ['parentHash'] }),
        { exists: true },
      );
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
    }
  }

  /**
   * An update that changes attributes the token's MAC covers: reads the item (verified), computes the MAC of the
   * item as `after` makes it, and writes only while `when` holds and the item still carries the MAC it was read
   * with, reading again when another write came between. Undefined when the token is gone, revoking or fails its MAC.
   */
  private async updateCovered(
    hash: string,
    after: (current: Item) => Item,
    change: (mac: string) => Change,
    when: Condition,
  ): Promise<Item | undefined> {
    const key = { pk: tokenPk(hash), sk: 'token' };
    for (let attempt = 1; ; attempt++) {
      const current = await this.store.getVerified(tokenKind, key.pk, key.sk);
      if (!current || current.revoking) return undefined;
      const mac = this.store.macOf(tokenKind, after(current));
      try {
        return await this.store.update(key, change(mac), { when: { all: [when, { equals: { mac: current.mac } }] } });
      } catch (error) {
        if (!(error instanceof ConditionFailed) || attempt >= coveredUpdateAttempts) throw error;
      }
    }
  }

  private live(item: Item): boolean {
    if (item.revoking) return false;
    const expireTime = item.expireTime as number;
    return expireTime === 0 || expireTime > epochSeconds(this.clock);
  }

  private item(entry: TokenEntry): Item {
    const expiring = entry.expireTime > 0;
    return {
      pk: tokenPk(entry.hash),
      sk: 'token',
      ...entry,
      usesGranted: entry.numUses,
      ...(expiring
        ? {
            duePk: tokenQueue(entry.hash),
            dueSk: dueKey(entry.expireTime, `token#${entry.hash}`),
            expiresAt: ttlBackstop(entry.expireTime),
          }
        : {}),
    };
  }

  private sealBatch(entry: TokenEntry): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.batchKey, iv);
    cipher.setAAD(batchAad);
    const body = Buffer.concat([cipher.update(JSON.stringify(entry), 'utf8'), cipher.final()]);
    return `hvb.${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')}`;
  }

  /**
   * Batch tokens opened lately, by their SHA-256 (never the token itself): a batch token never changes and this store's
   * key never does, so each is decrypted once per process, not on every request (issue 28: opening one took about
   * 20 µs of a read's CPU). Only tokens that opened are kept; each entry is frozen, as every request shares it, and
   * its expiry is checked on every use. At most `openedKept`: the whole map is dropped when it is full.
   */
  private readonly opened = new Map<string, TokenEntry>();

  /** A batch token's sealed entry, if it opens and has not expired. */
  private sealedEntry(token: string): TokenEntry | undefined {
    const id = hash('sha256', token, 'base64url');
    let entry = this.opened.get(id);
    if (!entry) {
      entry = this.openBatch(token);
      if (!entry) return undefined;
      if (this.opened.size >= openedKept) this.opened.clear();
      this.opened.set(id, entry);
    }
    if (entry.expireTime && entry.expireTime <= epochSeconds(this.clock)) return undefined;
    return entry;
  }

  private openBatch(token: string): TokenEntry | undefined {
    const raw = Buffer.from(token.slice(4), 'base64url');
    if (raw.length < 29) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.batchKey, raw.subarray(0, 12));
      decipher.setAAD(batchAad);
      decipher.setAuthTag(raw.subarray(raw.length - 16));
      return deepFreeze(
        JSON.parse(
          Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8'),
        ),
      );
    } catch {
      return undefined;
    }
  }
}

const openedKept = 1024;

/** A parsed JSON value frozen at every depth. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** The write that records a lease as owned by a token (in the token's partition), for the lease's own transaction. */
export const ownLeaseWrite = (tokenHash: string, leaseId: string): Write => ({
  put: { pk: tokenPk(tokenHash), sk: `lease#${leaseId}` },
});

/** Forgets that a token owns a lease, once the lease is gone. */
export const forgetOwnedLease = (store: Store, tokenHash: string, leaseId: string): Promise<unknown> =>
  store.delete({ pk: tokenPk(tokenHash), sk: `lease#${leaseId}` });

const batchAad = Buffer.from('keyhaven batch token v1');

/**
 * Only root makes root (Vault's token store and login rules; HCSEC-2025-13 for the spellings): a token carrying
 * `root` is minted only through the token store, asked for by a root token or by initialisation. Whatever calls
 * `create` (a login, a token role, a future path) gets this check, as the policies are sanitised first.
 */
function refuseRootUnlessRootAsks(request: NewToken): void {
  if (!request.issuer || !isTokenStore(request.issuer)) throw authMethodsCannotCreateRoot();
  const { creator } = request;
  if (creator === 'initialisation') return;
  if (!creator || !isRootEntry(creator))
    throw badRequest('root tokens may not be created without parent token being root');
}

/** Sorted, as Vault shows them; `unique` is sanitised already. */
function withDefault(unique: string[], noDefault: boolean): string[] {
  if (noDefault) return unique.filter((name) => name !== 'default').sort();
  return (unique.includes('default') ? unique : [...unique, 'default']).sort();
}

/** Vault's rules: period wins; a root token without a TTL never expires; otherwise ttl or the mount default, capped. */
function effectiveTtl(request: NewToken, isRoot: boolean): number {
  const caps = [request.explicitMaxTtl, request.mountMaxTtl].filter((cap) => cap > 0);
  let ttl: number;
  if (request.period) ttl = request.period;
  else if (request.ttl) ttl = request.ttl;
  else if (isRoot && request.type === 'service') return request.explicitMaxTtl;
  else ttl = request.mountDefaultTtl;
  return Math.min(ttl, ...caps);
}

function toEntry(item: Item): TokenEntry {
  const {
    pk: _pk,
    sk: _sk,
    duePk: _duePk,
    dueSk: _dueSk,
    expiresAt: _expiresAt,
    revoking: _revoking,
    mac: _mac,
    usesGranted: _usesGranted,
    ...entry
  } = item;
  return entry as unknown as TokenEntry;
}

/** Tries of an update of covered attributes that met another write of the same token between its read and write. */
const coveredUpdateAttempts = 5;

/** A use-limited token has 1..usesGranted uses left (its last use marks it revoking); an unlimited one has 0. */
function usesWithinGrant(item: Item): boolean {
  const granted = item.usesGranted as number | undefined;
  const left = item.numUses as number;
  if (granted === undefined || granted === 0) return left === 0;
  return left >= 1 && left <= granted;
}

const authMethodDisabled = () => badRequest('cannot create the token: its auth method was disabled');

const isTokenStore = (mount: MountRef) => mount.uuid === tokenStoreMount.uuid;
