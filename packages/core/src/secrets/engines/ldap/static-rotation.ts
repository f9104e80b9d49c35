import type { Core } from '../../../core.ts';
import { epochSeconds } from '../../../lib/clock.ts';
import { notFound } from '../../framework/errors.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import type { DirectoryConfig } from './config-model.ts';
import { type AccountItem, dueUpdate } from './records.ts';
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

export async function loadStaticRole(core: Core, storage: MountStorage, name: string): Promise<AccountItem | undefined> {
  return core.store.get<AccountItem>(storage.pk, staticRoleKey(name));
}

export function staticChange(core: Core, storage: MountStorage, name: string, item: AccountItem, config: DirectoryConfig): PasswordChange {
  const role = item.value as unknown as StaticRoleValue;
  const key = staticRoleKey(name);
  return {
    core,
    storage,
    key,
    dn: role.dn,
    config,
    due: dueUpdate(storage.pk, key, epochSeconds(core.clock) + role.rotation_period),
  };
}

export async function rotateStaticRole(core: Core, storage: MountStorage, name: string): Promise<void> {
  const item = await loadStaticRole(core, storage, name);
  if (!item) throw notFound(`no static role named "${name}"`);
  await changePassword(staticChange(core, storage, name, item, await requireDirectoryConfig(core, storage)));
}

/**
 * What `static-cred` answers from: the item as stored, or, when a rotation left a write-ahead, after settling it
 * so that the answer binds (see `settlePending`).
 */
export async function settleStaticRole(core: Core, storage: MountStorage, name: string, item: AccountItem): Promise<AccountItem> {
  if (!item.pending) return item;
  return settlePending(staticChange(core, storage, name, item, await requireDirectoryConfig(core, storage)), item);
}
