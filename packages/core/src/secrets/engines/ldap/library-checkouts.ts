import { setTimeout as sleep } from 'node:timers/promises';
import * as z from 'zod';
import { epochSeconds } from '../../../lib/clock.ts';
import { badRequest } from '../../../lib/errors.ts';
import { randomBase62 } from '../../../lib/random.ts';
import { dueKey } from '../../../storage/due.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import { leasedSecret, type PathSpec, path, type Request, type System } from '../../framework/backend.ts';
import { duration, stringList } from '../../framework/fields.ts';
import { leaseIdFor } from '../../leases/lease-manager.ts';
import { mountTtls } from '../../mounts/mount-table.ts';
import type { Caller } from '../../tokens/caller.ts';
import { messageOf } from './client.ts';
import type { DirectoryConfig } from './config-model.ts';
import { healFields, verifiedForRead } from './account-heal.ts';
import { engineContext, type LdapEngineContext } from './context.ts';
import {
  accountKey,
  accountsOf,
  borrowerFields,
  claimFields,
  claimSeconds,
  type LibraryAccount,
  type LibrarySet,
  librarySecretType,
  requireSet,
  setKey,
  setName,
  trimName,
} from './library-model.ts';
import { rotationQueue } from './records.ts';
import { ChangedConcurrently, changePassword, RotationInProgress, requireDirectoryConfig } from './write-ahead.ts';

/** `library/:set/check-out`, `…/check-in`, `library/manage/:set/check-in` and `…/status`: lending the accounts of a set. */

const checkInFields = z.object({
  name: setName,
  service_account_names: stringList
    .optional()
    .describe(
      "The accounts to check in; may be left out when the caller has exactly one of the set's accounts checked out.",
    ),
});

export const libraryCheckoutPaths: PathSpec[] = [
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
      ttl: duration
        .optional()
        .describe('How long the check-out lasts, at most the set\'s "ttl" (default: the set\'s "ttl").'),
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
          status[account.value.username] = {
            ...(account.available
              ? { available: true }
              : {
                  available: false,
                  borrower_client_token: account.borrowerAccessor ?? '',
                  borrower_entity_id: account.borrowerEntity ?? '',
                }),
            // Ours, beside Vault's: shown once the account has been healed.
            ...(account.lastHealed ? healFields(account) : {}),
          };
        }
        return { data: status };
      },
    },
  }),
];

/** Who the caller is, as the borrower of an account. */
function borrower(caller: Caller | undefined) {
  return {
    hash: caller?.entry.hash || caller?.entry.parentHash || '',
    accessor: caller?.entry.accessor ?? '',
    entity: caller?.entry.entityId ?? '',
  };
}

async function checkOut(request: Request<{ name: string; ttl?: number }>) {
  const { storage, mount, caller, data, path: requestPath, system } = request;
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
  // The claim's deadline: past it, the rotation job returns the account unless the lease is there (see claimUntil).
  const claimUntil = epochSeconds(system.clock) + claimSeconds;
  const { partition } = engineContext(request);
  // Why the last account claimed could not be lent (its password dead and not healable now), if one was.
  let unlendable: unknown;
  for (const username of set.service_account_names) {
    let taken: LibraryAccount | undefined;
    try {
      // The claim: only an available account with no password change in flight, and it joins the queue at its deadline.
      taken = await storage.update<LibraryAccount>(
        accountKey(username),
        {
          set: {
            available: false,
            checkoutId,
            leaseId,
            borrowerHash: who.hash,
            borrowerAccessor: who.accessor,
            borrowerEntity: who.entity,
            claimUntil,
            duePk: rotationQueue,
            dueSk: dueKey(claimUntil, `${partition}|${accountKey(username)}`),
          },
        },
        { when: { equals: { available: true }, missing: ['pending'] } },
      );
    } catch (error) {
      if (error instanceof ConditionFailed) continue;
      throw error;
    }
    if (!taken?.password) continue;
    const context = engineContext(request);
    let lent: LibraryAccount;
    try {
      // The password lent must bind: verified (once per value and 30 s in this process), healed at once if not.
      lent = (await verifiedForRead(
        context,
        () => requireDirectoryConfig(context),
        taken,
        'check-out',
      )) as LibraryAccount;
    } catch (error) {
      // Not lent: available again, and the next account is tried.
      await releaseClaim(context, taken.sk, checkoutId);
      unlendable = error;
      continue;
    }
    return {
      data: {
        service_account_name: username,
        password: storage.open(lent.sk, lent.password as string),
      },
      secret: libraryLease.secret({
        ttl,
        maxTtl,
        renewable: true,
        internal: { set: name, account: username, checkoutId },
        leaseSuffix: checkoutId,
      }),
    };
  }
  if (unlendable) throw unlendable;
  throw badRequest(`no service accounts available for check-out in set "${name}"`);
}

/** Undoes a claim whose check-out failed before its answer: the account is available again, as it was. */
async function releaseClaim(context: LdapEngineContext, key: string, checkoutId: string): Promise<void> {
  await context.storage
    .update(
      key,
      { set: { available: true }, remove: [...borrowerFields, ...claimFields] },
      {
        when: { equals: { checkoutId } },
      },
    )
    .catch((error) =>
      context.system.log.error('could not release the claim of a failed check-out; its deadline returns it', {
        key,
        error: messageOf(error),
      }),
    );
}

async function checkIn(request: Request<z.output<typeof checkInFields>>, forced: boolean) {
  const { storage, system, caller, data } = request;
  const name = trimName(data.name);
  const set = await requireSet(storage, name);
  const enforce = !forced && !set.disable_check_in_enforcement;
  const who = borrower(caller);
  const mayCheckIn = (account: LibraryAccount) =>
    !enforce ||
    (who.hash !== '' && account.borrowerHash === who.hash) ||
    (who.entity !== '' && account.borrowerEntity === who.entity);

  let names = data.service_account_names ?? [];
  if (names.length === 0) {
    const candidates = (await accountsOf(storage, set)).filter((account) => !account.available && mayCheckIn(account));
    if (candidates.length > 1)
      throw badRequest('"service_account_names" is required when more than one account is checked out');
    names = candidates.map((account) => account.value.username);
  }
  for (const account of names) {
    if (!set.service_account_names.includes(account))
      throw badRequest(`invalid "service_account_names": "${account}" is not in set "${name}"`);
  }
  const accounts = await Promise.all(names.map((account) => storage.getItem<LibraryAccount>(accountKey(account))));
  const out = accounts.filter((account): account is LibraryAccount => account !== undefined && !account.available);
  const refused = out.filter((account) => !mayCheckIn(account));
  if (refused.length > 0) {
    throw badRequest(
      `${refused.map((account) => `"${account.value.username}"`).join(', ')} cannot be checked in: not checked out by the caller`,
    );
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

/**
 * Sets a fresh password and makes the account available, if it is still out under the same check-out. True only for
 * the one call whose own write made it available: of concurrent check-ins (or a check-in and the lease's end) of one
 * check-out, one is acknowledged, and the others answer as a check-in of an available account does (issue 24). A call
 * that meets another's change in flight looks again (and tries again while the account is still out), within a bound.
 */
async function returnAccount(
  context: LdapEngineContext,
  config: DirectoryConfig,
  account: LibraryAccount,
): Promise<boolean> {
  if (!account.checkoutId) return false;
  const giveUpAt = Date.now() + contendedCheckInMs;
  for (;;) {
    try {
      await changePassword({
        context,
        key: account.sk,
        dn: account.value.dn,
        config,
        condition: { equals: { checkoutId: account.checkoutId } },
        record: { set: { available: true }, remove: [...borrowerFields, ...claimFields] },
        exclusive: true,
      });
      return true;
    } catch (error) {
      const now = await context.storage.getItem<LibraryAccount>(account.sk);
      // Someone else checked it in meanwhile: not ours to acknowledge.
      if (!now || now.available || now.checkoutId !== account.checkoutId) return false;
      if (!contended(error)) throw error;
      if (Date.now() >= giveUpAt) throw new RotationInProgress(`"${account.sk}"`);
      await sleep(10 + Math.random() * 40);
    }
  }
}

/** How long a check-in that keeps meeting other changes of the same account goes on trying. */
const contendedCheckInMs = 15_000;

/** A failure that only says another change of the account was under way (not the directory's or the config's). */
const contended = (error: unknown) =>
  error instanceof RotationInProgress || error instanceof ChangedConcurrently || error instanceof ConditionFailed;

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

/** What a check-out's lease keeps: the set, the account lent and the check-out it belongs to. */
type CheckoutInternal = { set: string; account: string; checkoutId: string };

export const libraryLease = leasedSecret<CheckoutInternal>(librarySecretType, {
  /** Lease end: automatic check-in, unless the account was already checked in. */
  revoke: async (lease) => {
    const account = await lease.storage.getItem<LibraryAccount>(accountKey(lease.internal.account));
    if (!account || account.available || account.checkoutId !== lease.internal.checkoutId) return;
    const context = engineContext(lease);
    await returnAccount(context, await requireDirectoryConfig(context), account);
  },
  renew: async ({ storage, internal, increment }) => {
    const account = await storage.getItem<LibraryAccount>(accountKey(internal.account));
    if (!account || account.available || account.checkoutId !== internal.checkoutId)
      throw badRequest('the account has already been checked in');
    const set = await storage.get<LibrarySet>(setKey(internal.set));
    const limit = set?.ttl ?? 0;
    if (limit === 0) return increment > 0 ? { ttl: increment } : undefined;
    return { ttl: Math.min(increment || limit, limit) };
  },
});

/**
 * The rotation job's visit to a library account at its claim's deadline (`claimUntil`): an account still out under a
 * check-out whose lease was never registered (the process died between the claim and the lease) is returned with a
 * fresh password; one its lease holds leaves the queue (the lease's end returns it). `mountPath` is the mount's
 * path, which lease ids start with. Throws when the directory cannot take the new password (the job retries).
 */
export async function settleLibraryClaim(
  context: LdapEngineContext,
  mountPath: string,
  key: string,
): Promise<'returned' | 'held' | 'none'> {
  const { storage, system } = context;
  const account = await storage.getItem<LibraryAccount>(key);
  if (!account) return 'none';
  let outcome: 'returned' | 'held' | 'none' = 'none';
  if (!account.available && account.checkoutId) {
    if ((account.claimUntil ?? 0) > epochSeconds(system.clock)) return 'none';
    if (await leaseHolds(system, mountPath, account)) outcome = 'held';
    else {
      system.log.error('returning a checked-out account whose lease was never registered', {
        account: account.value.username,
        leaseId: account.leaseId,
      });
      if (await returnAccount(context, await requireDirectoryConfig(context), account)) return 'returned';
      return 'none';
    }
  }
  await storage
    // Only if nobody queued it again meanwhile (a new check-out's claim).
    .update(
      key,
      { remove: claimFields },
      { when: account.dueSk === undefined ? { missing: ['dueSk'] } : { equals: { dueSk: account.dueSk } } },
    )
    .catch((error) => {
      if (!(error instanceof ConditionFailed)) throw error;
    });
  return outcome;
}

/** Whether the lease of the account's check-out exists (live, or still to be revoked). */
async function leaseHolds(system: System, mountPath: string, account: LibraryAccount): Promise<boolean> {
  if (!account.leaseId?.startsWith(mountPath)) return true; // not a lease of this mount's path: leave it to an operator
  const leases = await system.leases.internalsUnder(account.leaseId.slice(mountPath.length));
  return leases.some((internal) => internal.checkoutId === account.checkoutId);
}
