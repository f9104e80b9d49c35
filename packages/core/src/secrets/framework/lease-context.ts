import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/log.ts';
import type { Keyring } from '../../storage/keyring.ts';
import type { Store } from '../../storage/store.ts';
import type { LeaseRecord, LeaseRunner } from '../leases/lease-hooks.ts';
import type { LeaseHookLookup } from '../leases/lease-manager.ts';
import { MountStorage } from '../mounts/mount-storage.ts';
import type { Backend, LeaseContext } from './backend.ts';
import { systemFor } from './system.ts';

/**
 * The lease manager's way to the backends' lease hooks: each hook gets its lease with the mount's storage and
 * system view, as a handler gets them.
 */
export function leaseHooksOf(
  backends: ReadonlyMap<string, Backend>,
  services: { store: Store; keyring: Keyring; clock: Clock; log: Logger },
): LeaseHookLookup {
  return (mount, secretType, leases) => {
    const hooks = backends.get(mount.type)?.leases?.[secretType];
    if (!hooks) return undefined;
    const context = (lease: LeaseRecord): LeaseContext => ({
      ...lease,
      storage: new MountStorage(
        services.store,
        services.keyring,
        mount.uuid,
        undefined,
        backends.get(mount.type)?.authenticatedItems,
      ),
      system: systemFor({ clock: services.clock, log: services.log, leases, store: services.store }, mount),
    });
    const { renew } = hooks;
    const runner: LeaseRunner = { revoke: (lease) => hooks.revoke(context(lease)) };
    if (renew) runner.renew = (lease) => renew.call(hooks, context(lease));
    return runner;
  };
}
