import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/log.ts';
import type { Keyring } from '../../storage/keyring.ts';
import type { Store } from '../../storage/store.ts';
import type { AuditDevices } from '../audit/audit-devices.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { AskEngine } from '../leases/engine-request.ts';
import type { LeaseManager } from '../leases/lease-manager.ts';
import type { MountTable } from '../mounts/mount-table.ts';
import type { PolicyStore } from '../policies/policy-store.ts';
import type { TokenStore } from '../tokens/token-store.ts';
import type { Backend } from './backend.ts';

/**
 * The secrets service's parts, as the framework, the jobs and a builtin backend's `bind` see them: the table, the
 * keyring, time, and the shared registries built on them. `createCore` (composition/secrets-core.ts) builds them, and
 * names the result `Core`; no handler sees them (handlers get their mount's storage and a `System` view).
 */
export interface SecretsServices {
  store: Store;
  keyring: Keyring;
  clock: Clock;
  log: Logger;
  /** Backend types this process serves, by mount type. */
  backends: ReadonlyMap<string, Backend>;
  mounts: MountTable;
  policies: PolicyStore;
  tokens: TokenStore;
  leases: LeaseManager;
  /** Audit devices (`sys/audit`) and the log the pipeline writes to them. */
  audit: { devices: AuditDevices; log: AuditLog };
  /** Asks the function that bundles an engine to do that engine's part now (see `CoreOptions.askEngine`). */
  askEngine?: AskEngine;
}
