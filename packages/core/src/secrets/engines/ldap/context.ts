import type { Core } from '../../../core.ts';
import type { PasswordPolicy } from '../../../lib/password.ts';
import type { System } from '../../framework/backend.ts';
import { systemFor } from '../../framework/system.ts';
import { MountStorage, mountPartition } from '../../mounts/mount-storage.ts';
import type { MountEntry } from '../../mounts/mount-table.ts';
import { loadPasswordPolicy } from '../../sys/password-policies.ts';

/**
 * What the engine's code works with for one mount: its storage, the system view (clock, log, the mount's own
 * leases) and the named password policies. Handlers and lease hooks build it from their request
 * (`engineContext`); the rotation job from the table (`jobContext`). Nothing here reaches another mount.
 */
export interface EngineContext {
  storage: MountStorage;
  system: System;
  /** The mount's partition name: the rotation queue's sort key names the item it points at with it. */
  partition: string;
  /** The parsed password policy called `name` (`sys/policies/password/:name`), or undefined. */
  passwordPolicy(name: string): Promise<PasswordPolicy | undefined>;
}

/**
 * The context of a handler or lease hook. Password policies live outside the mount and `System` has no view of
 * them yet (Vault's `SystemView.GeneratePasswordFromPolicy`): reading them is the one use of `core` left, here.
 */
export function engineContext(from: { storage: MountStorage; system: System; mount: MountEntry; core: Core }): EngineContext {
  const { core } = from;
  return {
    storage: from.storage,
    system: from.system,
    partition: mountPartition(from.mount.uuid),
    passwordPolicy: (name) => loadPasswordPolicy(core, name),
  };
}

/** The context of a mount for a background job, which has the process (`Core`) rather than a request. */
export function jobContext(core: Core, mount: MountEntry): EngineContext {
  return engineContext({
    storage: new MountStorage(core.store, core.keyring, mount.uuid),
    system: systemFor(core, mount),
    mount,
    core,
  });
}
