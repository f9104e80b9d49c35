import type { System } from '../../framework/backend.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import type { MountEntry } from '../../mounts/mount-table.ts';

/** What the engine's work on a mount uses: the system view (clock, log, the mount's leases), the mount and its storage. */
export interface EngineContext {
  system: System;
  mount: MountEntry;
  storage: MountStorage;
}

/** The context of a request or a lease hook. */
export const contextOf = ({ system, mount, storage }: EngineContext): EngineContext => ({ system, mount, storage });
