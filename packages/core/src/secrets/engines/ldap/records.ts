import { dueKey } from '../../../storage/due.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import type { Change, Item } from '../../../storage/store.ts';
import type { MountItemKinds } from '../../mounts/mount-storage.ts';

/**
 * How the engine keeps an account whose password it owns (the root config, a static role, a library
 * account): one item in the mount's partition, with the passwords sealed and the rotation state beside
 * the fields, so a rotation is a conditional update of one item.
 */
export interface LdapAccountItem extends Item {
  /** The non-secret fields (config fields, role fields, check-out state). */
  value: Record<string, unknown>;
  /** Sealed current password (the bind password for the config). */
  password?: string;
  /** Sealed password before the last rotation. */
  lastPassword?: string;
  /** Epoch seconds of the last rotation. */
  lastRotation?: number;
  /** Write-ahead: the sealed new password of a rotation in flight. */
  pending?: string;
  pendingId?: string;
  /** Until when the rotation that wrote `pending` may still be running; after it, the next run recovers. */
  pendingUntil?: number;
  /** The framework write-ahead record of the change (`wal/…`), which the engine's job settles if nothing else does. */
  pendingWal?: string;
  /** When the job should rotate it next (epoch seconds), and the scheduled time the retries belong to. */
  dueAt?: number;
  scheduledAt?: number;
  /** Failed automatic rotations since the last success. */
  attempts?: number;
  /**
   * The account's DN sealed under its key (`account-heal.ts`): proof that the service itself wrote this DN here, which
   * a heal requires before it rotates a password it finds dead (a table writer cannot seal).
   */
  sealedDn?: string;
  /** Epoch seconds of the last heal (a rotation because the stored password no longer bound), how many, and why. */
  lastHealed?: number;
  healCount?: number;
  lastHealReason?: string;
  /** Epoch seconds of the last heal attempt, successful or not: no other starts within `healCooldownSeconds`. */
  healAttemptAt?: number;
}

/** The fields of a write-ahead on an account item. */
export const pendingFields = ['pending', 'pendingId', 'pendingUntil', 'pendingWal'];

/**
 * The item holding where each mount's account check stands (`account-check.ts`). A restore drops it (it is
 * marked `droppedOnRestore` for `functions/deploy/restore-table.ts`): with none, a check pass is due at once.
 */
export const checkCursorKey = 'account-check';

/** The due-queue name of this engine's rotations (GSI `due`). */
export const rotationQueue = 'ldap-rotation';

/** The fields to set and to remove that put an item in the rotation queue at `at`, or take it out (see `accountChange`). */
export function dueUpdate(
  partition: string,
  sk: string,
  at: number | undefined,
): { set: Record<string, unknown>; remove: string[] } {
  if (at === undefined)
    return {
      set: {},
      remove: ['duePk', 'dueSk', 'dueAt', 'scheduledAt', 'attempts'],
    };
  return {
    set: {
      duePk: rotationQueue,
      dueSk: dueKey(at, `${partition}|${sk}`),
      dueAt: at,
      scheduledAt: at,
    },
    remove: ['attempts'],
  };
}

/**
 * The change that sets `set` (a field whose value is `undefined` is removed) and removes `remove`; a field both set
 * to a value and listed in `remove` is set.
 */
export function accountChange(set: Record<string, unknown>, remove: string[] = []): Change {
  const assigned = Object.fromEntries(Object.entries(set).filter(([, value]) => value !== undefined));
  const removals = [...new Set([...remove, ...Object.keys(set)])].filter((field) => !(field in assigned));
  return {
    ...(Object.keys(assigned).length > 0 ? { set: assigned } : {}),
    ...(removals.length > 0 ? { remove: removals } : {}),
  };
}

/**
 * The engine's items that carry a MAC (`storage/item-mac.ts`; the backend's `authenticatedItems`): the configuration,
 * static roles, library sets and accounts, and the claims on managed accounts. The MAC covers `value` (the directory
 * URL and bind DN, TLS settings, a role's or account's DN and user name, a set's accounts and TTLs, a claim's owner),
 * the sealed client TLS key and any attribute not named here, so a forged destination, DN or set is refused. Outside
 * it: the bookkeeping that rotations, heals and check-outs change by partial updates, each either sealed bound to its
 * key (`password`, `lastPassword`, `pending`, `sealedDn`: a table writer can only put back an older sealed value) or
 * rotation and lending state (when a rotation is due, who holds an account: left open in docs/security.md).
 */
export const directoryItemKind = itemKind(
  'directory-item',
  [
    'password',
    'lastPassword',
    'lastRotation',
    ...pendingFields,
    'duePk',
    'dueSk',
    'dueAt',
    'scheduledAt',
    'attempts',
    'sealedDn',
    'lastHealed',
    'healCount',
    'lastHealReason',
    'healAttemptAt',
    'available',
    'checkoutId',
    'leaseId',
    'borrowerHash',
    'borrowerAccessor',
    'borrowerEntity',
    'claimUntil',
  ],
  { epoch: 'init' },
);

/** The keys of the engine's authenticated items (the item-kind table's row for them matches the same). */
export const directoryItemKeys = /^(config|static-role\/.*|library\/.*|library-account\/.*|managed\/.*)$/;

export const directoryItemKinds: MountItemKinds = (key) =>
  directoryItemKeys.test(key) ? directoryItemKind : undefined;
