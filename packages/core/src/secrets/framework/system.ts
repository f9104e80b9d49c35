import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/log.ts';
import type { Keyring } from '../../storage/keyring.ts';
import type { Store } from '../../storage/store.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { LeaseManager } from '../leases/lease-manager.ts';
import { uuid } from '../../lib/random.ts';
import { MountStorage } from '../mounts/mount-storage.ts';
import type { MountEntry } from '../mounts/mount-table.ts';
import { loadPasswordPolicy } from '../policies/password-policy-store.ts';
import type { Backend, System } from './backend.ts';

/** What a system view is made of: time, the logger, and the lease manager it narrows to one mount. */
export interface SystemServices {
  clock: Clock;
  log: Logger;
  leases: Pick<LeaseManager, 'revoke' | 'revokePrefix' | 'internalsUnder'>;
  /** The table, for the one thing outside its mount a handler may read: the named password policies. */
  store: Pick<Store, 'get' | 'getVerified'>;
  /** The audit log, where there is one (a lease hook's view has none: its engine's events go to the server log only). */
  audit?: { log: Pick<AuditLog, 'serviceEvent'> };
}

/** Each mount entry's view, made once per entry (the mount table's cache hands every request the same entry). */
const views = new WeakMap<MountEntry, { services: SystemServices; system: System }>();

/** The system view a mount's handlers and lease hooks get: the clock, the logger, the mount's own leases, the password policies. */
export function systemFor(services: SystemServices, mount: MountEntry): System {
  const made = views.get(mount);
  if (made?.services === services) return made.system;
  const system = systemView(services, mount);
  views.set(mount, { services, system });
  return system;
}

function systemView(services: SystemServices, mount: MountEntry): System {
  const own = (leaseId: string) => {
    if (!leaseId.startsWith(mount.path)) throw new RangeError(`lease "${leaseId}" is not one of mount "${mount.path}"`);
    return leaseId;
  };
  return {
    clock: services.clock,
    log: services.log,
    leases: {
      revoke: (leaseId) => services.leases.revoke(own(leaseId)),
      revokePrefix: (prefix) => services.leases.revokePrefix(`${mount.path}${prefix}`),
      internalsUnder: (prefix) => services.leases.internalsUnder(`${mount.path}${prefix}`),
    },
    passwordPolicy: (name) => loadPasswordPolicy(services, name),
    recordEvent: async (event) => {
      await services.audit?.log.serviceEvent({ ...event, mount }, uuid());
    },
  };
}

/** A mount's storage for a job that works on it outside a request (a request's handlers are given theirs). */
export function storageFor(
  core: { store: Store; keyring: Keyring; backends?: ReadonlyMap<string, Backend> },
  mount: Pick<MountEntry, 'uuid' | 'type'>,
): MountStorage {
  return new MountStorage(
    core.store,
    core.keyring,
    mount.uuid,
    undefined,
    core.backends?.get(mount.type)?.authenticatedItems,
  );
}
