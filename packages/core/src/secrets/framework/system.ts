import type { Core } from '../../core.ts';
import { MountStorage } from '../mounts/mount-storage.ts';
import type { MountEntry } from '../mounts/mount-table.ts';
import type { System } from './backend.ts';

/** The system view a mount's handlers and lease hooks get: the clock, the logger, and the mount's own leases. */
export function systemFor(core: Pick<Core, 'clock' | 'log' | 'leases'>, mount: MountEntry): System {
  const own = (leaseId: string) => {
    if (!leaseId.startsWith(mount.path)) throw new RangeError(`lease "${leaseId}" is not one of mount "${mount.path}"`);
    return leaseId;
  };
  return {
    clock: core.clock,
    log: core.log,
    leases: {
      revoke: (leaseId) => core.leases.revoke(own(leaseId)),
      revokePrefix: (prefix) => core.leases.revokePrefix(`${mount.path}${prefix}`),
      internalsUnder: (prefix) => core.leases.internalsUnder(`${mount.path}${prefix}`),
    },
  };
}

/** A mount's storage for a job that works on it outside a request (a request's handlers are given theirs). */
export function storageFor(core: Pick<Core, 'store' | 'keyring'>, mount: Pick<MountEntry, 'uuid'>): MountStorage {
  return new MountStorage(core.store, core.keyring, mount.uuid);
}
