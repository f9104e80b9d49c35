import * as z from 'zod';
import { badRequest, notFound } from '../../../lib/errors.ts';
import { randomBase62 } from '../../../lib/random.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import { type LeaseHooks, type PathSpec, path, type Request, type System } from '../../framework/backend.ts';
import { bool, duration, stringList } from '../../framework/fields.ts';
import { leaseIdFor } from '../../leases/lease-manager.ts';
import { type MountStorage, type MountWrite, maxTransactionWrites } from '../../mounts/mount-storage.ts';
import { mountTtls } from '../../mounts/mount-table.ts';
import type { Caller } from '../../tokens/caller.ts';
import { messageOf } from './client.ts';
import type { DirectoryConfig } from './config-model.ts';
import { type EngineContext, engineContext } from './context.ts';
import { checkHierarchicalName, claimWrites, currentOwner, releaseWrites } from './managed-accounts.ts';
import type { AccountItem } from './records.ts';
import { resolveEntry } from './static-roles.ts';
import { changePassword, requireDirectoryConfig } from './write-ahead.ts';

/**
 * `library/:set` and its check-out, check-in, `manage/:set/check-in` and `status`: service accounts lent
 * out one borrower at a time. Check-out is a conditional write on the account (`available = true`), so
 * concurrent check-outs never share an account; every check-in sets a fresh password. The account records its
 * check-out (`checkoutId`) and that check-out's lease id: a check-in by hand ends the lease, and a lease that
 * outlives its check-out (revoked or expired after the account went back, perhaps to another borrower) finds
 * another or no `checkoutId` and leaves the account alone.
 */

export const librarySecretType = 'library';
const dayInSeconds = 24 * 3600;

interface LibrarySet {
  service_account_names: string[];
  ttl: number;
  max_ttl: number;
  disable_check_in_enforcement: boolean;
}

/** An account of a set: its password fields (AccountItem) plus who has it. */
interface LibraryAccount extends AccountItem {
  value: { set: string; username: string; dn: string };
  available: boolean;
  /** The check-out the account is out under; also the last segment of its lease id. */
  checkoutId?: string;
  /** The lease of that check-out (absent on check-outs made before it was recorded). */
  leaseId?: string;
  borrowerHash?: string;
  borrowerAccessor?: string;
  borrowerEntity?: string;
}

const setKey = (name: string) => `library/${name}`;
const accountKey = (name: string) => `library-account/${name}`;
const trimName = (raw: string) => raw.replace(/\/+$/, '');
const borrowerFields = ['checkoutId', 'leaseId', 'borrowerHash', 'borrowerAccessor', 'borrowerEntity'];

/**
 * The items one service account costs a set's transaction: its account item and its two claims (user name, DN),
 * written when it joins and deleted when it leaves or the set is deleted.
 */
const writesPerAccount = 3;
/**
 * The most service accounts a set holds, and a write may add and remove together: the set's item and its accounts'
 * writes are one transaction of at most `maxTransactionWrites` (100), so a set is written and deleted all or nothing.
 */
export const maxSetAccounts = Math.floor((maxTransactionWrites - 1) / writesPerAccount);

const setName = z.string().describe('Name of the library set; may hold slashes.');
const setFields = z.object({
  name: setName,
  service_account_names: stringList
    .optional()
    .describe(`The user names of the existing service accounts the set lends out (a list or comma-separated); at most ${maxSetAccounts}.`),
  ttl: duration.optional().describe('How long a check-out lasts by default, in seconds or as a duration (default 24h).'),
  max_ttl: duration.optional().describe('The longest a check-out may last, renewals included (default 24h).'),
  disable_check_in_enforcement: bool.optional().describe('Let any caller check an account in, not only the one who checked it out.'),
});
const checkInFields = z.object({
  name: setName,
  service_account_names: stringList
    .optional()
    .describe("The accounts to check in; may be left out when the caller has exactly one of the set's accounts checked out."),
});

export const libraryPaths: PathSpec[] = [
  path({
    pattern: 'library/manage/:name+/check-in',
    fields: checkInFields,
    summaries: { update: 'Check service accounts in, whoever checked them out (for operators).' },
    operations: { update: (request) => checkIn(request, true) },
  }),
  path({
    pattern: 'library/:name+/check-out',
    fields: z.object({
      name: setName,
      ttl: duration.optional().describe('How long the check-out lasts, at most the set\'s "ttl" (default: the set\'s "ttl").'),
    }),
    summaries: { update: 'Check out an available service account of the set, with its password, under a lease.' },
    operations: { update: checkOut },
  }),
  path({
    pattern: 'library/:name+/check-in',
    fields: checkInFields,
    summaries: { update: 'Check in service accounts the caller checked out; each gets a new password.' },
    operations: { update: (request) => checkIn(request, false) },
  }),
  path({
    pattern: 'library/:name+/status',
    fields: z.object({ name: setName }),
    summaries: { read: "Read which of the set's service accounts are available, and who has the others." },
    operations: {
      read: async ({ storage, data }) => {
        const set = await requireSet(storage, trimName(data.name));
        const status: Record<string, unknown> = {};
        for (const account of await accountsOf(storage, set)) {
          status[account.value.username] = account.available
            ? { available: true }
            : {
                available: false,
                borrower_client_token: account.borrowerAccessor ?? '',
                borrower_entity_id: account.borrowerEntity ?? '',
              };
        }
        return { data: status };
      },
    },
  }),
  path({
    pattern: 'library/:name+',
    fields: setFields,
    summaries: {
      read: 'Read a library set.',
      create: 'Create a library set of service accounts to lend out; each account is given a new password.',
      update: 'Update a library set; accounts added get a new password, removed ones must be checked in.',
      delete: 'Delete a library set; none of its accounts may be checked out.',
    },
    exists: async ({ storage, data }) => (await storage.get(setKey(trimName(data.name)))) !== undefined,
    operations: {
      read: async ({ storage, data }) => {
        const set = await storage.get<LibrarySet>(setKey(trimName(data.name)));
        return set && { data: { ...set } };
      },
      create: writeSet,
      update: writeSet,
      delete: deleteSet,
    },
  }),
  path({
    pattern: 'library/:prefix*',
    fields: z.object({ prefix: z.string().default('').describe('List the library sets under this prefix (a name ending in a slash).') }),
    summaries: { list: 'List library sets.' },
    operations: {
      list: async ({ storage, data }) => {
        const prefix = trimName(data.prefix);
        return {
          data: {
            keys: await storage.list(setKey(prefix ? `${prefix}/` : '')),
          },
        };
      },
    },
  }),
];

async function requireSet(storage: MountStorage, name: string): Promise<LibrarySet> {
  const set = await storage.get<LibrarySet>(setKey(name));
  if (!set) throw notFound(`no library set named "${name}"`);
  return set;
}

async function accountsOf(storage: MountStorage, set: LibrarySet): Promise<LibraryAccount[]> {
  const accounts = await Promise.all(set.service_account_names.map((name) => storage.getItem<LibraryAccount>(accountKey(name))));
  return accounts.filter((account): account is LibraryAccount => account !== undefined);
}

async function writeSet(request: Request<z.output<typeof setFields>>) {
  const { storage, system, data } = request;
  const nameError = checkHierarchicalName('name', data.name);
  if (nameError) throw badRequest(nameError);
  const name = trimName(data.name);
  const existing = await storage.get<LibrarySet>(setKey(name));
  const set: LibrarySet = {
    service_account_names: data.service_account_names ?? existing?.service_account_names ?? [],
    ttl: data.ttl ?? existing?.ttl ?? dayInSeconds,
    max_ttl: data.max_ttl ?? existing?.max_ttl ?? dayInSeconds,
    disable_check_in_enforcement: data.disable_check_in_enforcement ?? existing?.disable_check_in_enforcement ?? false,
  };
  set.service_account_names = [...new Set(set.service_account_names)];
  if (set.service_account_names.length === 0) throw badRequest('missing "service_account_names": at least one service account is required');
  if (set.max_ttl > 0 && (set.ttl === 0 || set.ttl > set.max_ttl)) throw badRequest('invalid "ttl": must not be greater than "max_ttl"');

  const before = existing?.service_account_names ?? [];
  const added = set.service_account_names.filter((account) => !before.includes(account));
  const removed = before.filter((account) => !set.service_account_names.includes(account));
  checkTransactionSize(set.service_account_names.length, added.length + removed.length);
  const removedItems = await Promise.all(removed.map((account) => storage.getItem<LibraryAccount>(accountKey(account))));
  for (const item of removedItems) {
    if (item && !item.available) throw badRequest(`"${item.value.username}" is checked out; check it in before removing it from the set`);
  }
  const context = engineContext(request);
  const config = added.length > 0 ? await requireDirectoryConfig(context) : undefined;
  const resolved: Array<{ username: string; dn: string }> = [];
  for (const username of added) {
    const dn = await resolveEntry(config as DirectoryConfig, username, undefined).catch((error) => {
      throw error instanceof Error && 'status' in error && error.status === 400
        ? badRequest(`invalid "service_account_names": ${error.message.replace(/^invalid "username": /, '')}`)
        : error;
    });
    const owner = await currentOwner(storage, username, dn);
    if (owner) throw badRequest(`invalid "service_account_names": "${username}" is already managed by ${owner}`);
    resolved.push({ username, dn });
  }

  // One transaction: the set, its new accounts with their claims, and the removed ones released, or none of it.
  const owner = setKey(name);
  const writes: MountWrite[] = [
    { Put: { key: owner, item: { value: set } } },
    ...resolved.flatMap(({ username, dn }): MountWrite[] => [
      {
        Put: {
          key: accountKey(username),
          item: { value: { set: name, username, dn }, available: false },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      ...claimWrites(owner, username, dn),
    ]),
    ...removed.flatMap((account, index): MountWrite[] => {
      const item = removedItems[index];
      return [
        {
          Delete: {
            key: accountKey(account),
            ConditionExpression: 'attribute_not_exists(pk) OR #available = :yes',
            ExpressionAttributeNames: { '#available': 'available' },
            ExpressionAttributeValues: { ':yes': true },
          },
        },
        ...(item ? releaseWrites(item.value.username, item.value.dn) : []),
      ];
    }),
  ];
  try {
    await storage.transact(writes);
  } catch (error) {
    if (error instanceof ConditionFailed)
      throw badRequest('the set or its accounts changed concurrently (an account is managed elsewhere or checked out); try again');
    throw error;
  }

  // Adding an account checks it in, which gives it a password only the engine knows.
  for (const [index, { username, dn }] of resolved.entries()) {
    try {
      await changePassword({
        context,
        key: accountKey(username),
        dn,
        config: config as DirectoryConfig,
        record: { set: { available: true } },
      });
    } catch (error) {
      const undo: MountWrite[] = resolved
        .slice(index)
        .flatMap((account): MountWrite[] => [{ Delete: { key: accountKey(account.username) } }, ...releaseWrites(account.username, account.dn)]);
      const remaining = set.service_account_names.filter((account) => !resolved.slice(index).some((entry) => entry.username === account));
      if (remaining.length > 0)
        undo.push({
          Put: {
            key: owner,
            item: { value: { ...set, service_account_names: remaining } },
          },
        });
      else undo.push({ Delete: { key: owner } });
      await storage.transact(undo).catch((undoError) =>
        system.log.error('could not undo a failed library write', {
          set: name,
          error: messageOf(undoError),
        }),
      );
      throw error;
    }
  }
  return undefined;
}

function checkTransactionSize(accounts: number, changed: number): void {
  const why = `its writes (${writesPerAccount} per account and 1 for the set) must fit one transaction of ${maxTransactionWrites}`;
  if (accounts > maxSetAccounts) {
    throw badRequest(`invalid "service_account_names": a library set holds at most ${maxSetAccounts} service accounts, not ${accounts}: ${why}`);
  }
  if (changed > maxSetAccounts) {
    throw badRequest(
      `invalid "service_account_names": one write may add and remove at most ${maxSetAccounts} service accounts together, not ${changed}: ${why}; change the set in steps`,
    );
  }
}

async function deleteSet({ storage, data }: Request<z.output<typeof setFields>>) {
  const name = trimName(data.name);
  const set = await storage.get<LibrarySet>(setKey(name));
  if (!set) return undefined;
  const accounts = await accountsOf(storage, set);
  const out = accounts.filter((account) => !account.available).map((account) => account.value.username);
  if (out.length > 0) throw badRequest(`cannot delete set "${name}" while accounts are checked out: ${out.join(', ')}`);
  const writes: MountWrite[] = [
    { Delete: { key: setKey(name) } },
    ...accounts.flatMap((account): MountWrite[] => [
      {
        Delete: {
          key: account.sk,
          ConditionExpression: '#available = :yes',
          ExpressionAttributeNames: { '#available': 'available' },
          ExpressionAttributeValues: { ':yes': true },
        },
      },
      ...releaseWrites(account.value.username, account.value.dn),
    ]),
  ];
  try {
    // A set holds at most `maxSetAccounts`, so its deletion is one transaction.
    await storage.transact(writes);
  } catch (error) {
    if (error instanceof ConditionFailed) throw badRequest(`an account of "${name}" was checked out meanwhile; try again`);
    throw error;
  }
  return undefined;
}

/** Who the caller is, as the borrower of an account. */
function borrower(caller: Caller | undefined) {
  return {
    hash: caller?.entry.hash || caller?.entry.parentHash || '',
    accessor: caller?.entry.accessor ?? '',
    entity: caller?.entry.entityId ?? '',
  };
}

async function checkOut({ storage, mount, caller, data, path: requestPath }: Request<{ name: string; ttl?: number }>) {
  const name = trimName(data.name);
  const set = await requireSet(storage, name);
  const { maxTtl: mountMax } = mountTtls(mount);
  const maxTtl = Math.min(set.max_ttl || mountMax, mountMax);
  let ttl = data.ttl ?? set.ttl;
  // 0 asks for no limit; either way the set's ttl caps it.
  if (set.ttl > 0 && (ttl === 0 || ttl > set.ttl)) ttl = set.ttl;
  ttl = Math.min(ttl || maxTtl, maxTtl);
  const who = borrower(caller);
  // The lease is registered after this handler returns; choosing its suffix lets the account record its id first.
  const checkoutId = randomBase62(24);
  const leaseId = leaseIdFor(mount, requestPath, checkoutId);
  for (const username of set.service_account_names) {
    let taken: LibraryAccount | undefined;
    try {
      taken = await storage.update<LibraryAccount>(
        accountKey(username),
        'SET #available = :no, checkoutId = :id, leaseId = :lease, borrowerHash = :hash, borrowerAccessor = :accessor, borrowerEntity = :entity',
        {
          ConditionExpression: '#available = :yes AND attribute_not_exists(#pending)',
          ExpressionAttributeNames: {
            '#available': 'available',
            '#pending': 'pending',
          },
          ExpressionAttributeValues: {
            ':no': false,
            ':yes': true,
            ':id': checkoutId,
            ':lease': leaseId,
            ':hash': who.hash,
            ':accessor': who.accessor,
            ':entity': who.entity,
          },
        },
      );
    } catch (error) {
      if (error instanceof ConditionFailed) continue;
      throw error;
    }
    if (!taken?.password) continue;
    return {
      data: {
        service_account_name: username,
        password: storage.open(taken.sk, taken.password),
      },
      secret: {
        type: librarySecretType,
        ttl,
        maxTtl,
        renewable: true,
        internal: { set: name, account: username, checkoutId },
        leaseSuffix: checkoutId,
      },
    };
  }
  throw badRequest(`no service accounts available for check-out in set "${name}"`);
}

async function checkIn(request: Request<z.output<typeof checkInFields>>, forced: boolean) {
  const { storage, system, caller, data } = request;
  const name = trimName(data.name);
  const set = await requireSet(storage, name);
  const enforce = !forced && !set.disable_check_in_enforcement;
  const who = borrower(caller);
  const mayCheckIn = (account: LibraryAccount) =>
    !enforce || (who.hash !== '' && account.borrowerHash === who.hash) || (who.entity !== '' && account.borrowerEntity === who.entity);

  let names = data.service_account_names ?? [];
  if (names.length === 0) {
    const candidates = (await accountsOf(storage, set)).filter((account) => !account.available && mayCheckIn(account));
    if (candidates.length > 1) throw badRequest('"service_account_names" is required when more than one account is checked out');
    names = candidates.map((account) => account.value.username);
  }
  for (const account of names) {
    if (!set.service_account_names.includes(account)) throw badRequest(`invalid "service_account_names": "${account}" is not in set "${name}"`);
  }
  const accounts = await Promise.all(names.map((account) => storage.getItem<LibraryAccount>(accountKey(account))));
  const out = accounts.filter((account): account is LibraryAccount => account !== undefined && !account.available);
  const refused = out.filter((account) => !mayCheckIn(account));
  if (refused.length > 0) {
    throw badRequest(`${refused.map((account) => `"${account.value.username}"`).join(', ')} cannot be checked in: not checked out by the caller`);
  }
  const context = engineContext(request);
  const config = out.length > 0 ? await requireDirectoryConfig(context) : undefined;
  const checkIns: string[] = [];
  for (const account of out) {
    if (!(await returnAccount(context, config as DirectoryConfig, account))) continue;
    checkIns.push(account.value.username);
    await endLease(system, account);
  }
  return { data: { check_ins: checkIns } };
}

/** Sets a fresh password and makes the account available, if it is still out under the same check-out. */
async function returnAccount(context: EngineContext, config: DirectoryConfig, account: LibraryAccount): Promise<boolean> {
  if (!account.checkoutId) return false;
  try {
    await changePassword({
      context,
      key: account.sk,
      dn: account.value.dn,
      config,
      condition: {
        expression: 'checkoutId = :checkout',
        values: { ':checkout': account.checkoutId },
      },
      record: { set: { available: true }, remove: [...borrowerFields] },
    });
    return true;
  } catch (error) {
    const now = await context.storage.getItem<LibraryAccount>(account.sk);
    // Someone else checked it in meanwhile: nothing to do.
    if (now && (now.available || now.checkoutId !== account.checkoutId)) return false;
    throw error;
  }
}

/**
 * Ends the lease of a check-out just checked in, after the check-in (the other order could leave an account out
 * with no lease to bring it back). Its revoke hook finds the account no longer out under that check-out and does
 * nothing; if this fails or the process dies first, the lease ends at its expiry the same way.
 */
async function endLease(system: System, account: LibraryAccount): Promise<void> {
  if (!account.leaseId) return;
  await system.leases.revoke(account.leaseId).catch((error) =>
    system.log.error('could not end the lease of a checked-in account', {
      leaseId: account.leaseId,
      error: messageOf(error),
    }),
  );
}

export const libraryLeaseHooks: LeaseHooks = {
  /** Lease end: automatic check-in, unless the account was already checked in. */
  revoke: async (lease) => {
    const account = await lease.storage.getItem<LibraryAccount>(accountKey(String(lease.internal.account)));
    if (!account || account.available || account.checkoutId !== lease.internal.checkoutId) return;
    const context = engineContext(lease);
    await returnAccount(context, await requireDirectoryConfig(context), account);
  },
  renew: async ({ storage, internal, increment }) => {
    const account = await storage.getItem<LibraryAccount>(accountKey(String(internal.account)));
    if (!account || account.available || account.checkoutId !== internal.checkoutId) throw badRequest('the account has already been checked in');
    const set = await storage.get<LibrarySet>(setKey(String(internal.set)));
    const limit = set?.ttl ?? 0;
    if (limit === 0) return increment > 0 ? { ttl: increment } : undefined;
    return { ttl: Math.min(increment || limit, limit) };
  },
};
