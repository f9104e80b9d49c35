import type { PasswordPolicy } from '../../../lib/password.ts';
import type { System } from '../../framework/backend.ts';
import type { SecretsServices } from '../../framework/services.ts';
import { storageFor, systemFor } from '../../framework/system.ts';
import { type MountStorage, mountPartition } from '../../mounts/mount-storage.ts';
import type { MountEntry } from '../../mounts/mount-table.ts';

/**
 * What the engine's code works with for one mount: its storage, the system view (clock, log, the mount's own
 * leases) and the named password policies. Handlers and lease hooks build it from their request
 * (`engineContext`); the rotation job from the table (`jobContext`). Nothing here reaches another mount.
 */
export interface LdapEngineContext {
  storage: MountStorage;
  system: System;
  /** The mount's partition name: the rotation queue's sort key names the item it points at with it. */
  partition: string;
  /** The parsed password policy called `name` (`sys/policies/password/:name`), or undefined. */
  passwordPolicy(name: string): Promise<PasswordPolicy | undefined>;
}

/** The context of a handler or lease hook. */
export function engineContext(from: { storage: MountStorage; system: System; mount: MountEntry }): LdapEngineContext {
  return {
    storage: from.storage,
    system: from.system,
    partition: mountPartition(from.mount.uuid),
    passwordPolicy: (name) => from.system.passwordPolicy(name),
  };
}

/** The context of a mount for a background job, which has the process's parts (`SecretsServices`) rather than a request. */
export function jobContext(core: SecretsServices, mount: MountEntry): LdapEngineContext {
  return engineContext({ storage: storageFor(core, mount), system: systemFor(core, mount), mount });
}
