import { dueKey } from '../../../storage/due.ts';
import type { Item } from '../../../storage/store.ts';

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
  /** When the job should rotate it next (epoch seconds), and the scheduled time the retries belong to. */
  dueAt?: number;
  scheduledAt?: number;
  /** Failed automatic rotations since the last success. */
  attempts?: number;
}

/** The due-queue name of this engine's rotations (GSI `due`). */
export const rotationQueue = 'ldap-rotation';

/** The update-expression pieces that put an item in the rotation queue at `at`, or take it out. */
export function dueUpdate(partition: string, sk: string, at: number | undefined): { set: Record<string, unknown>; remove: string[] } {
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

/** Builds `SET a = :a, … REMOVE x, …` with attribute names and values from plain objects. */
export function updateExpression(set: Record<string, unknown>, remove: string[] = []) {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const assignments: string[] = [];
  const removeList = [...remove];
  for (const [key, value] of Object.entries(set)) {
    if (value === undefined) {
      removeList.push(key);
      continue;
    }
    names[`#${key}`] = key;
    values[`:${key}`] = value;
    assignments.push(`#${key} = :${key}`);
  }
  const removals = [...new Set(removeList)].filter((key) => !(key in set) || set[key] === undefined);
  for (const key of removals) names[`#${key}`] = key;
  const expression = [
    assignments.length > 0 ? `SET ${assignments.join(', ')}` : '',
    removals.length > 0 ? `REMOVE ${removals.map((key) => `#${key}`).join(', ')}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return {
    UpdateExpression: expression,
    ExpressionAttributeNames: names,
    ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
  };
}
