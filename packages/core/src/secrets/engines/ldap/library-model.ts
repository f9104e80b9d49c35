import * as z from 'zod';
import { notFound } from '../../../lib/errors.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import type { AccountItem } from './records.ts';

/**
 * `library/:set` and its check-out, check-in, `manage/:set/check-in` and `status`: service accounts lent
 * out one borrower at a time. Check-out is a conditional write on the account (`available = true`), so
 * concurrent check-outs never share an account; every check-in sets a fresh password. The account records its
 * check-out (`checkoutId`) and that check-out's lease id: a check-in by hand ends the lease, and a lease that
 * outlives its check-out (revoked or expired after the account went back, perhaps to another borrower) finds
 * another or no `checkoutId` and leaves the account alone.
 */

/** The lease type of a check-out (the backend's `leases`). */
export const librarySecretType = 'library';

export interface LibrarySet {
  service_account_names: string[];
  ttl: number;
  max_ttl: number;
  disable_check_in_enforcement: boolean;
}

/** An account of a set: its password fields (AccountItem) plus who has it. */
export interface LibraryAccount extends AccountItem {
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

export const setKey = (name: string) => `library/${name}`;
export const accountKey = (name: string) => `library-account/${name}`;
export const trimName = (raw: string) => raw.replace(/\/+$/, '');
export const borrowerFields = ['checkoutId', 'leaseId', 'borrowerHash', 'borrowerAccessor', 'borrowerEntity'];

export const setName = z.string().describe('Name of the library set; may hold slashes.');

export async function requireSet(storage: MountStorage, name: string): Promise<LibrarySet> {
  const set = await storage.get<LibrarySet>(setKey(name));
  if (!set) throw notFound(`no library set named "${name}"`);
  return set;
}

export async function accountsOf(storage: MountStorage, set: LibrarySet): Promise<LibraryAccount[]> {
  const accounts = await Promise.all(set.service_account_names.map((name) => storage.getItem<LibraryAccount>(accountKey(name))));
  return accounts.filter((account): account is LibraryAccount => account !== undefined);
}
