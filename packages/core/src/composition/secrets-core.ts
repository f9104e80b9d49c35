import { type CoreBaseOptions, createCoreBase } from './shared-core.ts';
import { AuditDevices } from '../secrets/audit/audit-devices.ts';
import { AuditLog } from '../secrets/audit/audit-log.ts';
import type { Backend } from '../secrets/framework/backend.ts';
import { leaseHooksOf } from '../secrets/framework/lease-context.ts';
import type { SecretsServices } from '../secrets/framework/services.ts';
import type { AskEngine } from '../secrets/leases/engine-request.ts';
import { LeaseManager } from '../secrets/leases/lease-manager.ts';
import { MountTable } from '../secrets/mounts/mount-table.ts';
import { PolicyStore } from '../secrets/policies/policy-store.ts';
import { isBuiltin } from '../secrets/sys/builtin.ts';
import { TokenStore } from '../secrets/tokens/token-store.ts';

/** The secrets service's parts as `createCore` builds them: the framework's `SecretsServices`, named here as the composition's product. */
export type Core = SecretsServices;
export type { AskEngine, EngineRequest } from '../secrets/leases/engine-request.ts';

export type CoreOptions = CoreBaseOptions & CoreSettings;
export type { CoreStorage } from './shared-core.ts';

/** What the secrets service's core takes beyond the shared core (`shared-core.ts`: storage, key source, clock, log). */
export interface CoreSettings {
  backends: Backend[];
  /** How long mount tables and compiled policies are trusted before a re-read (default 5 s). */
  cacheSeconds?: number;
  /** The stage's routed mounts in AWS (see MountTable); absent locally, where every family is served. */
  declaredMounts?: ReadonlyArray<{ path: string; type: string }>;
  /** In AWS, the system function's way to the engines' functions, so a revocation there is as synchronous as Vault's. */
  askEngine?: AskEngine;
  /** Where a `file` audit device with `file_path=stdout` writes (the process's output by default). */
  auditStdout?: (line: string) => void;
}

export async function createCore(options: CoreOptions): Promise<Core> {
  const { store, keyring, clock, log } = await createCoreBase({ ...options, epochs: ['init'] });
  const cacheSeconds = options.cacheSeconds ?? 5;
  const backends = new Map(options.backends.map((backend) => [backend.type, backend]));
  const knownTypes = (kind: 'secret' | 'auth') =>
    [...backends.values()].filter((backend) => backend.kind === kind).map((backend) => backend.type);
  const mounts = new MountTable(store, clock, knownTypes, cacheSeconds, options.declaredMounts);
  // Built in dependency order, each from what is built before it: mounts, leases, tokens (which revoke leases).
  const leases = new LeaseManager({
    store,
    keyring,
    clock,
    log,
    mounts,
    bundles: (mountType) => backends.has(mountType),
    hooks: leaseHooksOf(backends, { store, keyring, clock, log }),
    ...(options.askEngine ? { askEngine: options.askEngine } : {}),
  });
  const tokens = new TokenStore(
    store,
    keyring,
    clock,
    (mount) => mounts.inService(mount),
    // The lease stays queued for retry on its own schedule; the token's revocation goes on.
    (leaseId) => leases.revoke(leaseId).catch(() => undefined),
  );
  const auditStdout = options.auditStdout ?? ((line: string) => process.stdout.write(line));
  const auditDevices = new AuditDevices(store, keyring, clock, cacheSeconds, auditStdout, log);
  const core: Core = {
    store,
    keyring,
    clock,
    log,
    backends,
    mounts,
    policies: new PolicyStore(store, clock, cacheSeconds),
    tokens,
    leases,
    audit: { devices: auditDevices, log: new AuditLog(auditDevices) },
    ...(options.askEngine ? { askEngine: options.askEngine } : {}),
  };
  // The builtin backends (`sys/`, `auth/token/`, `identity/`) get the services their handlers use.
  for (const backend of options.backends) if (isBuiltin<Core>(backend)) backends.set(backend.type, backend.bind(core));
  return core;
}
