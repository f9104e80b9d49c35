import * as z from 'zod';
import { badRequest } from '../../../lib/errors.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import { type PathSpec, path, type Request } from '../../framework/backend.ts';
import { bool, duration, stringList } from '../../framework/fields.ts';
import { type MountWrite, maxTransactionWrites } from '../../mounts/mount-storage.ts';
import { messageOf } from './client.ts';
import type { DirectoryConfig } from './config-model.ts';
import { sealDn } from './account-heal.ts';
import { engineContext } from './context.ts';
import {
  accountKey,
  accountsOf,
  type LibraryAccount,
  type LibrarySet,
  setKey,
  setName,
  trimName,
} from './library-model.ts';
import { checkHierarchicalName, claimWrites, currentOwner, releaseWrites } from './managed-accounts.ts';
import { resolveEntry } from './static-roles.ts';
import { changePassword, requireDirectoryConfig } from './write-ahead.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/** `library/:set` (write, read, delete) and `library/` (list): the sets of service accounts the engine lends out. */

const dayInSeconds = 24 * 3600;

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

const setFields = z.object({
  name: setName,
  service_account_names: stringList
    .optional()
    .describe(
      `The user names of the existing service accounts the set lends out (a list or comma-separated); at most ${maxSetAccounts}.`,
    ),
  ttl: duration
    .optional()
    .describe('How long a check-out lasts by default, in seconds or as a duration (default 24h).'),
  max_ttl: duration.optional().describe('The longest a check-out may last, renewals included (default 24h).'),
  disable_check_in_enforcement: bool
    .optional()
    .describe('Let any caller check an account in, not only the one who checked it out.'),
});

export const librarySetPaths: PathSpec[] = [
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
    fields: z.object({
      prefix: typeString
        .pipe(z.string())
        .default('')
        .describe('List the library sets under this prefix (a name ending in a slash).'),
    }),
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
  if (set.service_account_names.length === 0)
    throw badRequest('missing "service_account_names": at least one service account is required');
  if (set.max_ttl > 0 && (set.ttl === 0 || set.ttl > set.max_ttl))
    throw badRequest('invalid "ttl": must not be greater than "max_ttl"');

  const before = existing?.service_account_names ?? [];
  const added = set.service_account_names.filter((account) => !before.includes(account));
  const removed = before.filter((account) => !set.service_account_names.includes(account));
  checkTransactionSize(set.service_account_names.length, added.length + removed.length);
  const removedItems = await Promise.all(
    removed.map((account) => storage.getItem<LibraryAccount>(accountKey(account))),
  );
  for (const item of removedItems) {
    if (item && !item.available)
      throw badRequest(`"${item.value.username}" is checked out; check it in before removing it from the set`);
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
    { put: owner, item: { value: set } },
    ...resolved.flatMap(({ username, dn }): MountWrite[] => [
      {
        put: accountKey(username),
        item: {
          value: { set: name, username, dn },
          available: false,
          sealedDn: sealDn(context, accountKey(username), dn),
        },
        when: { absent: true },
      },
      ...claimWrites(owner, username, dn),
    ]),
    ...removed.flatMap((account, index): MountWrite[] => {
      const item = removedItems[index];
      return [
        // Gone already, or back and available: never an account that is out.
        { delete: accountKey(account), when: { any: [{ absent: true }, { equals: { available: true } }] } },
        ...(item ? releaseWrites(item.value.username, item.value.dn) : []),
      ];
    }),
  ];
  try {
    await storage.transact(writes);
  } catch (error) {
    if (error instanceof ConditionFailed)
      throw badRequest(
        'the set or its accounts changed concurrently (an account is managed elsewhere or checked out); try again',
      );
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
        .flatMap((account): MountWrite[] => [
          { delete: accountKey(account.username) },
          ...releaseWrites(account.username, account.dn),
        ]);
      const remaining = set.service_account_names.filter(
        (account) => !resolved.slice(index).some((entry) => entry.username === account),
      );
      if (remaining.length > 0)
        undo.push({ put: owner, item: { value: { ...set, service_account_names: remaining } } });
      else undo.push({ delete: owner });
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
    throw badRequest(
      `invalid "service_account_names": a library set holds at most ${maxSetAccounts} service accounts, not ${accounts}: ${why}`,
    );
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
    { delete: setKey(name) },
    ...accounts.flatMap((account): MountWrite[] => [
      { delete: account.sk, when: { equals: { available: true } } },
      ...releaseWrites(account.value.username, account.value.dn),
    ]),
  ];
  try {
    // A set holds at most `maxSetAccounts`, so its deletion is one transaction.
    await storage.transact(writes);
  } catch (error) {
    if (error instanceof ConditionFailed)
      throw badRequest(`an account of "${name}" was checked out meanwhile; try again`);
    throw error;
  }
  return undefined;
}
