import * as z from 'zod';
import { notFound } from '../../../lib/errors.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import type { LdapAccountItem } from './records.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/**
 * `library/:set` and its check-out, check-in, `manage/:set/check-in` and `status`: service accounts lent
 * out one borrower at a time. Check-out is a conditional write on the account (`available = true`), so
 * concurrent check-outs never share an account; every check-in sets a fresh password. The account records its
 * check-out (`checkoutId`) and that check-out's lease id: a check-in by hand ends the lease, and a lease that
 * outlives its check-out (revoked or expired after the account went back, perhaps to another borrower) finds
 * another or no `checkoutId` and leaves the account alone. A check-out is two writes (the claim, then its lease, once
 * the handler has returned); a process killed between them leaves a claim no lease holds, which the rotation job
 * returns (a fresh password, available again) once its deadline (`claimUntil`) has passed.
 */

/** The lease type of a check-out (the backend's `leases`). */
export const librarySecretType = 'library';

export interface LibrarySet {
  service_account_names: string[];
  ttl: number;
  max_ttl: number;
  disable_check_in_enforcement: boolean;
}

/** An account of a set: its password fields (LdapAccountItem) plus who has it. */
export interface LibraryAccount extends LdapAccountItem {
  value: { set: string; username: string; dn: string };
  available: boolean;
  /** The check-out the account is out under; also the last segment of its lease id. */
  checkoutId?: string;
  /** The lease of that check-out (absent on check-outs made before it was recorded). */
  leaseId?: string;
  borrowerHash?: string;
  borrowerAccessor?: string;
  borrowerEntity?: string;
  /**
   * Until when the check-out's lease may still be registered (epoch seconds): the lease is written after the claim
   * (when the handler has returned), so a process that dies between the two leaves the account out with no lease.
   * The claim waits in the rotation queue until then; the job returns the account if no lease holds it by that time.
   */
  claimUntil?: number;
}

export const setKey = (name: string) => `library/${name}`;
export const accountKey = (name: string) => `library-account/${name}`;
export const trimName = (raw: string) => raw.replace(/\/+$/, '');
export const borrowerFields = ['checkoutId', 'leaseId', 'borrowerHash', 'borrowerAccessor', 'borrowerEntity'];
/** The claim's deadline and its place in the rotation queue (with the job's retry count): cleared with the borrower. */
export const claimFields = ['claimUntil', 'duePk', 'dueSk', 'dueAt', 'attempts'];
/**
 * How long a check-out's lease has to be registered after its claim: four times the longest an API request lives in
 * AWS (29 s), so no live request registers a lease after the job returned its account.
 */
export const claimSeconds = 120;

export const setName = typeString.pipe(z.string()).describe('Name of the library set; may hold slashes.');

export async function requireSet(storage: MountStorage, name: string): Promise<LibrarySet> {
  const set = await storage.get<LibrarySet>(setKey(name));
  if (!set) throw notFound(`no library set named "${name}"`);
  return set;
}

export async function accountsOf(storage: MountStorage, set: LibrarySet): Promise<LibraryAccount[]> {
  const accounts = await Promise.all(
    set.service_account_names.map((name) => storage.getItem<LibraryAccount>(accountKey(name))),
  );
  return accounts.filter((account): account is LibraryAccount => account !== undefined);
}
