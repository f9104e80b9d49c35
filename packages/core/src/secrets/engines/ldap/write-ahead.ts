import { epochSeconds } from '../../../lib/clock.ts';
import { badRequest, DomainError, notFound, upstreamFailure } from '../../../lib/errors.ts';
import { uuid } from '../../../lib/random.ts';
import { type Condition, ConditionFailed } from '../../../storage/store.ts';
import type { WalRollback } from '../../framework/backend.ts';
import { walAttributes, walRecord } from '../../framework/write-ahead.ts';
import type { MountStorage, MountWrite } from '../../mounts/mount-storage.ts';
import { canBind, DirectoryError, messageOf, timeouts, withDirectory } from './client.ts';
import { configKey, type DirectoryConfig, directoryConfig, loadConfigItem, newPassword } from './config-model.ts';
import { engineContext, type LdapEngineContext } from './context.ts';
import { accountChange, type LdapAccountItem, pendingFields } from './records.ts';

/**
 * Changing a password the engine owns without ever losing it:
 *   1. write ahead: the new password is stored sealed as `pending` (only if no other change is in flight), and in
 *      the same transaction a framework write-ahead record (`secrets/framework/write-ahead.ts`, kind
 *      `ldap-password`) that names the change, due when its window ends;
 *   2. change it in the directory;
 *   3. record it as the current password (only if our `pending` is still there), dropping the record in the same
 *      transaction.
 * A run that dies between 2 and 3 leaves `pending`. Whoever finds it next does not wait for the run's
 * window (`pendingUntil`) to pass: it binds with the pending password, and if the directory takes it, records
 * it (the change had landed). If not, after the window it discards it; inside the window, a new change adopts
 * it (`adoptPending`): it takes the write-ahead over under its own id and sets the same pending password in
 * the directory, so whether or not the first run is still alive both write the same value, and exactly one
 * record wins (the other finds its password recorded and succeeds). A read never changes the directory: it
 * answers whichever of the two passwords binds (`settlePending`). The root config instead rolls the directory
 * back when step 3 fails, since the engine cannot work without knowing its own bind password, and a root
 * change inside another's window still waits for it. A change nobody comes back to (a library account no one checks
 * in or out, a root config no request needs) is settled by the engine's job: the backend's `walRollback`
 * (`ldapRollback`) runs `recoverPending` for each record left past its window.
 */

/** The write-ahead a change holds: its id on the account item, and its framework record (absent on older items). */
interface Held {
  id: string;
  wal?: string | undefined;
}

/** The kind of the framework write-ahead record of a password change. */
export const passwordChangeKind = 'ldap-password';

/** What a password change's record keeps: the account item it is about. */
export interface PasswordChangeRecord {
  key: string;
}

export interface PasswordChange {
  context: LdapEngineContext;
  key: string;
  /** The entry whose password changes. */
  dn: string;
  /** How the engine connects; for the root account this is the config being rotated. */
  config: DirectoryConfig;
  /** The root account: bind as itself (with the stored password) and roll back when recording fails. */
  isRoot?: boolean;
  /** Fields to set (or remove) together with the new password, e.g. a library account becoming available. */
  record?: { set?: Record<string, unknown>; remove?: string[] };
  /** Condition the write-ahead also needs (e.g. the account is still checked out by this lease). */
  condition?: Condition;
  /** The rotation queue fields to set with the new password (next automatic rotation). */
  due?: { set: Record<string, unknown>; remove: string[] };
  /**
   * Succeed only if this change's own record lands (a check-in's acknowledgement): when another change took the
   * write-ahead over and recorded it, the password is not counted as ours, and the record's ConditionFailed is thrown.
   */
  exclusive?: boolean;
}

export class RotationInProgress extends DomainError {
  constructor(what: string) {
    super('invalid', `a password change of ${what} is already in progress; try again shortly`);
  }
}

/** The item no longer met the change's condition when its write-ahead was written (e.g. the account was checked in). */
export class ChangedConcurrently extends DomainError {
  constructor(what: string) {
    super('invalid', `${what} changed while its password was being rotated; try again`);
  }
}

/** Runs the three steps; returns the new password. */
export async function changePassword(change: PasswordChange): Promise<string> {
  const { context, key } = change;
  const { storage, system } = context;
  let item = await load(change);
  if (item.pending) {
    await finishPending(change, item);
    item = await load(change);
    if (item.pending) throw new RotationInProgress(`"${key}"`);
  }
  const config = change.isRoot
    ? { ...change.config, bindpass: opened(storage, key, item.password) ?? '' }
    : change.config;
  const password = await newPassword(context, config);
  const pendingId = uuid();
  const budget = windowOf(config);
  const wal = walRecord<PasswordChangeRecord>(system.clock, passwordChangeKind, { key }, budget);
  const held: Held = { id: pendingId, wal: wal.sk };

  const ahead = {
    pending: storage.seal(key, password),
    pendingId,
    pendingUntil: wal.dueAt,
    pendingWal: wal.sk,
  };
  // Only onto an existing item with no change in flight, and whatever else the change needs to still hold.
  const free: Condition = { exists: true, missing: ['pending'] };
  try {
    await storage.transact([
      { update: key, change: { set: ahead }, when: change.condition ? { all: [free, change.condition] } : free },
      { put: wal.sk, item: walAttributes(wal) },
    ]);
  } catch (error) {
    if (error instanceof ConditionFailed) {
      const now = await storage.getItem<LdapAccountItem>(key);
      if (!now) throw notFound();
      if (now.pending) throw new RotationInProgress(`"${key}"`);
      throw new ChangedConcurrently(`"${key}"`);
    }
    throw error;
  }

  try {
    await withDirectory(config, (directory) => directory.setPassword(change.dn, password));
  } catch (error) {
    if (error instanceof DirectoryError && error.unchanged) await clearPending(change, held);
    // Otherwise whether the server applied it is unknown (the answer may be what was lost): the next run finds out.
    else await markStale(change, held);
    throw error;
  }

  try {
    await record(change, item, password, held);
  } catch (error) {
    // Someone who found the write-ahead recorded it (or adopted it) first: the password is ours either way.
    if (error instanceof ConditionFailed && !change.exclusive && (await holdsPassword(change, password, pendingId)))
      return password;
    if (!change.isRoot) {
      await markStale(change, held);
      throw error;
    }
    const oldPassword = config.bindpass;
    try {
      await withDirectory({ ...config, bindpass: password }, (directory) =>
        directory.setPassword(change.dn, oldPassword),
      );
    } catch (rollbackError) {
      await markStale(change, held);
      throw upstreamFailure(
        `storing the new root password failed (${messageOf(error)}) and rolling the directory back failed (${messageOf(rollbackError)}); the next rotation recovers it`,
      );
    }
    await clearPending(change, held);
    throw upstreamFailure(
      `storing the new root password failed; the directory was rolled back to the old password: ${messageOf(error)}`,
    );
  }
  return password;
}

/**
 * Settles a write-ahead left by a run that did not finish: if the directory accepts the pending password it
 * becomes the current one, otherwise it is discarded. Throws when the directory cannot be asked.
 */
export async function recoverPending(
  change: PasswordChange,
  item: LdapAccountItem,
): Promise<'recorded' | 'discarded' | 'none'> {
  const { storage } = change.context;
  const { key } = change;
  if (!item.pending || !item.pendingId) return 'none';
  const pending = storage.open(key, item.pending);
  const bindDn = change.dn;
  const config = change.isRoot
    ? { ...change.config, bindpass: opened(storage, key, item.password) ?? '' }
    : change.config;
  if (await canBind(config, change.isRoot ? rootBindIdentity(config) : bindDn, pending)) {
    await record({ ...change, record: undefined }, item, pending, heldBy(item)).catch(ignoreConditionFailed);
    change.context.system.log.info('recovered a password change that had reached the directory', { key });
    return 'recorded';
  }
  await clearPending(change, heldBy(item));
  return 'discarded';
}

/**
 * Settles a write-ahead found by a change that wants to start: records it if the directory already has it,
 * discards it once its window has passed, and otherwise (not the root) adopts it and finishes it here.
 */
async function finishPending(change: PasswordChange, item: LdapAccountItem): Promise<void> {
  if (!item.pending || !item.pendingId) return;
  const expired = (item.pendingUntil ?? 0) <= epochSeconds(change.context.system.clock);
  if (expired) {
    await recoverPending(change, item);
    return;
  }
  const pending = change.context.storage.open(change.key, item.pending);
  if (await pendingBinds(change, item, pending)) {
    await record({ ...change, record: undefined }, item, pending, heldBy(item)).catch(ignoreConditionFailed);
    return;
  }
  if (!change.isRoot) await adoptPending(change, item, pending);
}

/**
 * Takes over a write-ahead whose run may have died before changing the directory: the same password under a new
 * id and window (its record, kept, falls due with the new window), then set in the directory and recorded. A first
 * run still alive writes the same value, and its record (or clean-up) finds the id changed. On failure the
 * write-ahead is left for the next bind check, or the job.
 */
async function adoptPending(change: PasswordChange, item: LdapAccountItem, pending: string): Promise<void> {
  const { key } = change;
  const { storage, system } = change.context;
  const adopted: Held = { id: uuid(), wal: item.pendingWal };
  const until = epochSeconds(system.clock) + windowOf(change.config);
  try {
    await storage.transact([
      {
        update: key,
        change: { set: { pendingId: adopted.id, pendingUntil: until } },
        when: { equals: { pendingId: item.pendingId } },
      },
      ...recordDueAt(adopted, until),
    ]);
  } catch (error) {
    // Another change adopted or finished it meanwhile; the caller looks again.
    if (error instanceof ConditionFailed) return;
    throw error;
  }
  try {
    await withDirectory(change.config, (directory) => directory.setPassword(change.dn, pending));
  } catch (error) {
    await markStale(change, adopted);
    throw error;
  }
  await record({ ...change, record: undefined }, item, pending, adopted).catch(ignoreConditionFailed);
  system.log.info('finished a password change that an earlier run left unfinished', { key });
}

/**
 * What a read of an account with a write-ahead must answer: never a password the directory no longer takes.
 * Returns the item to answer from, after recording the pending password if the directory has it; throws a 502
 * when the directory cannot be asked or takes neither password.
 */
export async function settlePending(change: PasswordChange, item: LdapAccountItem): Promise<LdapAccountItem> {
  if (!item.pending || !item.pendingId) return item;
  const { key } = change;
  const { storage, system } = change.context;
  const pending = storage.open(key, item.pending);
  const reload = async () => (await storage.getItem<LdapAccountItem>(key)) ?? item;
  const recordPending = async () => {
    await record({ ...change, record: undefined }, item, pending, heldBy(item)).catch(ignoreConditionFailed);
    system.log.info('recorded a password change that had reached the directory', { key });
    return reload();
  };
  if (await pendingBinds(change, item, pending)) return recordPending();
  if ((item.pendingUntil ?? 0) <= epochSeconds(system.clock)) {
    await clearPending(change, heldBy(item));
    return reload();
  }
  // Its run may still be under way: the current password is the answer while it binds.
  const current = opened(storage, key, item.password);
  if (current !== undefined && (await canBind(change.config, change.dn, current))) return item;
  if (await pendingBinds(change, item, pending)) return recordPending();
  throw upstreamFailure(
    `the directory takes neither the current nor the pending password of "${key}"; rotate it again`,
  );
}

const pendingBinds = (change: PasswordChange, item: LdapAccountItem, pending: string) => {
  const config = change.isRoot
    ? {
        ...change.config,
        bindpass: opened(change.context.storage, change.key, item.password) ?? '',
      }
    : change.config;
  return canBind(config, change.isRoot ? rootBindIdentity(config) : change.dn, pending);
};

/** Whether the stored item now holds `password`: recorded, or as a write-ahead another change adopted from ours. */
async function holdsPassword(change: PasswordChange, password: string, ownPendingId: string): Promise<boolean> {
  const { storage } = change.context;
  const item = await storage.getItem<LdapAccountItem>(change.key);
  if (!item) return false;
  if (opened(storage, change.key, item.password) === password) return true;
  return item.pendingId !== ownPendingId && opened(storage, change.key, item.pending) === password;
}

/** How long a run may still be changing the directory after its write-ahead. */
function windowOf(config: DirectoryConfig): number {
  const { connectMs, requestMs } = timeouts(config);
  return Math.ceil((connectMs + requestMs) / 1000) * 2 + 30;
}

const rootBindIdentity = (config: DirectoryConfig) =>
  config.fields.upndomain ? `${config.fields.binddn}@${config.fields.upndomain}` : config.fields.binddn;

async function load(change: PasswordChange): Promise<LdapAccountItem> {
  const item = await change.context.storage.getItem<LdapAccountItem>(change.key);
  if (!item) throw notFound(`"${change.key}" does not exist`);
  return item;
}

async function record(change: PasswordChange, item: LdapAccountItem, password: string, held: Held): Promise<void> {
  const { key } = change;
  const { storage, system } = change.context;
  const set: Record<string, unknown> = {
    password: storage.seal(key, password),
    lastPassword: item.password,
    lastRotation: epochSeconds(system.clock),
    ...change.due?.set,
    ...change.record?.set,
  };
  const remove = [...pendingFields, ...(change.due?.remove ?? []), ...(change.record?.remove ?? [])];
  // Only while the write-ahead is still this change's: one that was adopted or settled meanwhile is not recorded
  // twice. Its record goes in the same transaction.
  await storage.transact([
    { update: key, change: accountChange(set, remove), when: { equals: { pendingId: held.id } } },
    ...dropRecord(held),
  ]);
}

/** The write-ahead an item holds. */
const heldBy = (item: LdapAccountItem): Held => ({ id: item.pendingId as string, wal: item.pendingWal });

/** The write that drops a change's framework record, in the transaction that settles the change. */
const dropRecord = (held: Held): MountWrite[] => (held.wal ? [{ delete: held.wal }] : []);

/** The write that moves a change's framework record to fall due at `at` (only while it is still there). */
const recordDueAt = (held: Held, at: number): MountWrite[] =>
  held.wal ? [{ update: held.wal, change: { set: { dueAt: at } }, when: { exists: true } }] : [];

async function markStale(change: PasswordChange, held: Held): Promise<void> {
  const now = epochSeconds(change.context.system.clock);
  await change.context.storage
    .transact([
      { update: change.key, change: { set: { pendingUntil: 0 } }, when: { equals: { pendingId: held.id } } },
      // Its record falls due now: the job settles it if no request does first.
      ...recordDueAt(held, now),
    ])
    .catch((error) =>
      change.context.system.log.error('could not mark a failed password change for recovery', {
        key: change.key,
        error: messageOf(error),
      }),
    );
}

async function clearPending(change: PasswordChange, held: Held): Promise<void> {
  await change.context.storage
    .transact([
      { update: change.key, change: { remove: pendingFields }, when: { equals: { pendingId: held.id } } },
      ...dropRecord(held),
    ])
    .catch(ignoreConditionFailed);
}

function opened(storage: MountStorage, key: string, sealed: string | undefined): string | undefined {
  return sealed ? storage.open(key, sealed) : undefined;
}

function ignoreConditionFailed(error: unknown): void {
  if (!(error instanceof ConditionFailed)) throw error;
}

/**
 * The config to connect with, or a 400 telling the caller to write one first. A root rotation killed after the
 * directory took its password would otherwise leave the engine binding with a dead one until its window passed:
 * if the directory takes the pending root password, it is recorded first.
 */
export async function requireDirectoryConfig(context: LdapEngineContext): Promise<DirectoryConfig> {
  const { storage, system } = context;
  let item = await loadConfigItem(storage);
  if (!item) throw badRequest('the directory engine is not configured: write "config" first');
  if (item.pending && item.pendingId) {
    const config = directoryConfig(storage, item);
    const change: PasswordChange = {
      context,
      key: configKey,
      dn: config.fields.binddn,
      config,
      isRoot: true,
    };
    try {
      const pending = storage.open(configKey, item.pending);
      if (await pendingBinds(change, item, pending)) {
        await record(change, item, pending, heldBy(item)).catch(ignoreConditionFailed);
        system.log.info('recorded a root password change that had reached the directory', { key: configKey });
        item = (await loadConfigItem(storage)) ?? item;
      }
    } catch (error) {
      // Unreachable now: the operation that needs the directory reports it.
      system.log.error('could not check an unfinished root password change', {
        error: messageOf(error),
      });
    }
  }
  return directoryConfig(storage, item);
}

/**
 * The engine's write-ahead rollback (`Backend.walRollback`): a password change whose record is past its window and
 * still names the account's write-ahead is settled as a change that finds it would settle it (`recoverPending`):
 * recorded if the directory takes the pending password, discarded if not. A record the account no longer names was
 * settled already and is dropped. The directory being unreachable throws, and the framework retries with backoff.
 */
export const ldapRollback: WalRollback = {
  forMount: (walContext) => {
    const context = engineContext(walContext);
    // The mount's directory config, read once for all its due records (and only if one needs it; a failed read is
    // tried again by the next record).
    let config: Promise<DirectoryConfig> | undefined;
    const directoryConfigOnce = () =>
      (config ??= requireDirectoryConfig(context).catch((error: unknown) => {
        config = undefined;
        throw error;
      }));
    return async (record) => {
      if (record.kind !== passwordChangeKind) return;
      const { key } = record as unknown as PasswordChangeRecord;
      const item = await context.storage.getItem<LdapAccountItem>(key);
      if (!item?.pending || item.pendingWal !== record.sk) return;
      if ((item.pendingUntil ?? 0) > epochSeconds(context.system.clock))
        throw new Error(`the password change of "${key}" is still within its window`);
      if (key === configKey) {
        const config = directoryConfig(context.storage, item);
        await recoverPending({ context, key, dn: config.fields.binddn, config, isRoot: true }, item);
        return;
      }
      const dn = (item.value as { dn?: unknown }).dn;
      if (typeof dn !== 'string') throw new Error(`"${key}" names no directory entry`);
      await recoverPending({ context, key, dn, config: await directoryConfigOnce() }, item);
    };
  },
};
