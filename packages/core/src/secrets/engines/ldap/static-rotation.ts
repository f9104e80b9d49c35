import { epochSeconds } from '../../../lib/clock.ts';
import { notFound } from '../../../lib/errors.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import type { DirectoryConfig } from './config-model.ts';
import type { LdapEngineContext } from './context.ts';
import { dueUpdate, type LdapAccountItem } from './records.ts';
import { changePassword, type PasswordChange, requireDirectoryConfig, settlePending } from './write-ahead.ts';

/** Rotating a static role's password: now (`rotate-role`, import) or when due (the job). */

export const staticRoleKeyPrefix = 'static-role/';
export const staticRoleKey = (name: string) => `${staticRoleKeyPrefix}${name}`;

export interface StaticRoleValue {
  username: string;
  dn: string;
  rotation_period: number;
  skip_import_rotation: boolean;
  /** Epoch seconds of creation: the period of a role never rotated counts from it. */
  created: number;
}

export async function loadStaticRole(storage: MountStorage, name: string): Promise<LdapAccountItem | undefined> {
  return storage.getItem<LdapAccountItem>(staticRoleKey(name));
}

export function staticChange(
  context: LdapEngineContext,
  name: string,
  item: LdapAccountItem,
  config: DirectoryConfig,
): PasswordChange {
  const role = item.value as unknown as StaticRoleValue;
  const key = staticRoleKey(name);
  return {
    context,
    key,
    dn: role.dn,
    config,
    due: dueUpdate(context.partition, key, epochSeconds(context.system.clock) + role.rotation_period),
  };
}

export async function rotateStaticRole(context: LdapEngineContext, name: string): Promise<void> {
  const item = await loadStaticRole(context.storage, name);
  if (!item) throw notFound(`no static role named "${name}"`);
  await changePassword(staticChange(context, name, item, await requireDirectoryConfig(context)));
}

/**
 * What `static-cred` answers from: the item as stored, or, when a rotation left a write-ahead, after settling it
 * so that the answer binds (see `settlePending`).
 */
export async function settleStaticRole(
  context: LdapEngineContext,
  name: string,
  item: LdapAccountItem,
): Promise<LdapAccountItem> {
  if (!item.pending) return item;
  return settlePending(staticChange(context, name, item, await requireDirectoryConfig(context)), item);
}
