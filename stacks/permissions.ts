/**
 * What each function may do on the table, derived from what it sends: `test/deploy/function-permissions.test.ts`
 * runs every function (DynamoDB Local, the KMS, Lambda, Consul and Google emulators, a real slapd), records each AWS
 * call it makes, maps it to IAM actions (a transaction item by item) and checks the synthesised role grants those
 * actions and nothing more, on the partitions it touched, and refuses the other service's partitions. DynamoDB Local
 * enforces no IAM, so that check is what keeps a role from missing one.
 *
 * Every function is limited to partition-key patterns (`ForAllValues:StringLike` on `dynamodb:LeadingKeys`), once for
 * what it reads and once for what it writes, so a compromised function (or anyone holding its role's credentials)
 * cannot reach the other service's items, nor rewrite what it only reads (the policies, the mount table, the keyring
 * and audit devices in `sys`). Two limits of that condition shape the rest:
 * - `ForAllValues` holds for a request with no leading key at all, and a `Scan` has none: no function is granted
 *   `Scan` (or PartiQL), so no request escapes the condition.
 * - a `Query` on the `due` index carries the index's partition key (`duePk`, a queue name) as its leading key, not
 *   the table's: the index gets its own statement, limited to the queues the function sweeps (an index query returns
 *   whole items of any partition, so that limit is what keeps a job out of the other service's queue).
 */

import type { SecretsFamily } from '../packages/core/src/secrets/families.ts';
import { engineFamilies, engineJobs, engineLeaseTypes, extraReads, periodicQueues, prefetches } from './families.ts';

export type TableAction =
  | 'dynamodb:GetItem'
  | 'dynamodb:BatchGetItem'
  | 'dynamodb:PutItem'
  | 'dynamodb:UpdateItem'
  | 'dynamodb:DeleteItem'
  | 'dynamodb:Query'
  | 'dynamodb:ConditionCheckItem';

/** The actions that read items; the rest (`PutItem`, `UpdateItem`, `DeleteItem`, `ConditionCheckItem`) write. */
export const readActions: readonly TableAction[] = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'];

export interface TableAccess {
  /** Actions on the table's items. */
  items: TableAction[];
  /** The partition keys its read actions may touch (IAM `StringLike` patterns on `dynamodb:LeadingKeys`). */
  reads: string[];
  /** The partition keys its write actions may touch. */
  writes: string[];
  /** The `due` index queues (`duePk` patterns) it queries; absent: it does not query the index. */
  dueQueues?: string[];
  /**
   * Patterns granted that the deploy tests' recorded runs do not reach (`read:<pattern>`, `write:<pattern>`), each
   * with the code path that needs it: the permissions test accepts an unused pattern only when it is named here.
   */
  unrecorded?: Record<string, string>;
}

const read: TableAction[] = ['dynamodb:GetItem', 'dynamodb:Query'];
const write: TableAction[] = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'];
const transact: TableAction = 'dynamodb:ConditionCheckItem';

/**
 * The table's partitions (`packages/core/src/**`): `sys` (keyring, init, audit devices: composition/secrets-core.ts, sys/init.ts,
 * audit/audit-devices.ts), `mounts` and `mount#<uuid>` (mount table and each mount's storage), `in-service#<uuid>#NN`
 * (mount-table.ts), `policies`, `password-policies`, `token#<hash>`, `accessor#<id>`, `issued#<mount uuid>#NN`
 * (token-store.ts), `leases#NN`, `revoked-leases#NN` and, from before sharding, `leases` (lease-manager.ts); the
 * scheduler's are all `sched#…` (scheduler/keys.ts).
 */
const scheduler = 'sched#*';
/** Revoking a token (its last use, its expiry, a TTL removal): its children, accessor, issuer index and leases. */
const tokenRevocation = ['token#*', 'accessor#*', 'issued#*', 'leases#*', 'revoked-leases#*'];
/** What every request of the secrets service reads: the keyring and audit devices, the mount table, ACLs, the token. */
const secretsPipeline = ['sys', 'mounts', 'policies', 'token#*'];
const why = {
  lastUse:
    'a limited-use token revoked at its last use in this function takes its accessor, issuer index and leases (TokenStore.revoke)',
  finishDisabled:
    'finishing a disabled mount (asked by the system function, or a job) wipes its storage and deletes its entry (disable-mount.ts)',
  revokePrefix: 'revoking the leases under a prefix lists them (LeaseManager.under, asked by the system function)',
  legacyLeases:
    'a lease written before sharding lives in the bare `leases` partition; the sweep moves it (LeaseManager.adoptUnsharded)',
  policies:
    'a caller with a token other than root: its ACL policies are read (the deploy run calls the engines with the root token)',
  forget: 'a lease revoked here is recorded as revoked (LeaseManager.forget)',
};

/** A secrets engine's function (kv, ldap, mesh, cloud): its mounts' storage, its leases, and what the pipeline needs. */
const engine = (extra: { reads?: string[]; unrecorded?: Record<string, string> } = {}): Omit<TableAccess, 'items'> => ({
  reads: [...secretsPipeline, 'mount#*', 'leases#*', ...(extra.reads ?? [])],
  writes: ['mount#*', ...tokenRevocation, 'mounts'],
  unrecorded: {
    'read:leases#*': why.revokePrefix,
    'write:accessor#*': why.lastUse,
    'write:issued#*': why.lastUse,
    'write:mounts': why.finishDisabled,
    ...extra.unrecorded,
  },
});

/** An engine's job: its lease queues (every shard), revoking leases and finishing its disabled mounts. */
const engineJob = (
  types: string[],
  extraQueues: string[] = [],
  extra: { reads?: string[]; unrecorded?: Record<string, string> } = {},
): Omit<TableAccess, 'items'> => ({
  reads: ['sys', 'mounts', 'mount#*', 'leases#*', ...(extra.reads ?? [])],
  writes: ['mount#*', 'mounts', 'token#*', 'leases', 'leases#*', 'revoked-leases#*'],
  dueQueues: [...types.flatMap((type) => [`expiry:${type}`, `expiry:${type}#*`]), ...extraQueues],
  unrecorded: {
    'read:leases#*': why.finishDisabled,
    'write:mount#*': why.finishDisabled,
    'write:mounts': why.finishDisabled,
    'write:leases': why.legacyLeases,
    ...extra.unrecorded,
  },
});

/** By function id, as the stacks name them (`Secrets-<family>`, `Scheduler-…`, `Job-…`). */
export const tableAccess: Record<string, TableAccess> = {
  // sys/, auth/token/, identity/: every partition of the secrets service, never the scheduler's.
  'Secrets-system': {
    items: [...read, ...write, transact],
    reads: [
      'sys',
      'mounts',
      'policies',
      'password-policies',
      'token#*',
      'accessor#*',
      'issued#*',
      'leases#*',
      'mount#*',
    ],
    writes: ['sys', 'mounts', 'policies', 'password-policies', ...tokenRevocation, 'mount#*', 'in-service#*'],
    unrecorded: {
      'read:password-policies': 'sys/policies/password/* (sys/password-policies.ts)',
      'write:password-policies': 'sys/policies/password/* (sys/password-policies.ts)',
      'read:issued#*':
        'disabling an auth mount revokes the tokens it issued, listed from its issuer index (TokenStore.revokeIssued)',
      'write:sys':
        'sys/audit/* enables and disables audit devices (audit-devices.ts); sys/init on a stage without deploy-time tokens',
      'write:mount#*': why.finishDisabled,
      'write:in-service#*':
        'disabling a login mount sets its in-service markers in the same transaction (MountTable.markDisabling)',
      'write:revoked-leases#*': why.forget,
    },
  },
  // A limited-use token spends its uses (UpdateItem) in whichever function serves the request. A login checks its
  // mount's in-service marker (ConditionCheckItem) and writes the token with its accessor and issuer index.
  'Secrets-jwt': {
    items: [...read, ...write, transact],
    reads: [...secretsPipeline, 'mount#*'],
    writes: ['mount#*', 'in-service#*', ...tokenRevocation],
    unrecorded: { 'read:policies': why.policies, 'write:leases#*': why.lastUse, 'write:revoked-leases#*': why.lastUse },
  },
  // Each engine's function (stacks/SecretsApi.ts), from what its backends declare: the partitions they read beyond an
  // engine's own, BatchGetItem where a path prefetches (the authenticated read reads the token and the secret in one
  // round trip), and what the deploy run (test/deploy/function-calls.ts) does not reach with each.
  ...Object.fromEntries(
    engineFamilies.map((family) => {
      const reads = extraReads(family, 'endpoints');
      const unrecorded = {
        'read:policies': why.policies,
        ...Object.fromEntries(Object.entries(reads).map(([pattern, reason]) => [`read:${pattern}`, reason])),
      };
      const prefetch: TableAction[] = prefetches(family) ? ['dynamodb:BatchGetItem'] : [];
      return [
        `Secrets-${family}`,
        {
          items: [...read, ...prefetch, ...write],
          ...engine({ reads: Object.keys(reads), unrecorded }),
        },
      ];
    }),
  ),
  // The scheduler's functions: its own items, and the keyring (read) in `sys`.
  // BatchGetItem: a list of allocations reads them by their links in one round trip (cluster/allocations/store.ts).
  'Scheduler-api': {
    items: [...read, 'dynamodb:BatchGetItem', ...write, transact],
    reads: [scheduler, 'sys'],
    writes: [scheduler],
  },
  'Scheduler-event-stream': { items: read, reads: [scheduler, 'sys'], writes: [] },
  // The client protocol (register, heartbeats and the node sweep they run, node events, services): the scheduler's
  // items only.
  'Scheduler-client': {
    items: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', ...write],
    reads: [scheduler, 'sys'],
    writes: [scheduler],
  },
  // Expired tokens of both services (the one job that spans them), kv leases, the login mounts' disables, the
  // cluster's nodes whose heartbeat is late (each marked down in a transaction that puts the node and its beat), and
  // the evaluations due (the worker reads the evaluation queues and a job's allocations by their links, BatchGetItem)
  // and the deployments due (the deployment watcher's queue).
  'Job-sweep': {
    items: [...read, 'dynamodb:BatchGetItem', ...write],
    reads: ['sys', 'mounts', 'mount#*', 'token#*', 'issued#*', 'leases#*', scheduler],
    writes: ['mount#*', 'mounts', ...tokenRevocation, 'leases', scheduler],
    dueQueues: [
      'expiry',
      'expiry#*',
      'expiry:kv',
      'expiry:kv#*',
      'sched#token-expiry',
      'sched#token-expiry#*',
      'sched#eval-queue',
      'sched#eval-queue#*',
      'sched#eval-blocked',
      'sched#eval-blocked#*',
      'sched#deployment-due',
      'sched#deployment-due#*',
    ],
    unrecorded: {
      'read:mount#*': why.finishDisabled,
      'write:mount#*': why.finishDisabled,
      'write:mounts': why.finishDisabled,
      'read:issued#*': 'finishing a disabled login mount revokes the tokens it issued (TokenStore.revokeIssued)',
      'read:leases#*': why.finishDisabled,
      'write:leases#*': 'an expired token with kv leases: they are claimed and revoked (LeaseManager.revoke)',
      'write:revoked-leases#*': why.forget,
      'write:leases': why.legacyLeases,
    },
  },
  // Each engine's job (stacks/Jobs.ts), from what its backend declares: its lease queues, its periodic jobs' queues
  // and the partitions they read.
  ...Object.fromEntries(
    (Object.keys(engineJobs) as SecretsFamily[]).map((family) => {
      const reads = extraReads(family, 'job');
      const unrecorded = Object.fromEntries(
        Object.entries(reads).map(([pattern, reason]) => [`read:${pattern}`, reason]),
      );
      const access = engineJob(engineLeaseTypes(family), periodicQueues(family), {
        reads: Object.keys(reads),
        unrecorded,
      });
      // The directory's job writes its mount's storage itself (its periodic account checks heal their records), so
      // that write is recorded by the deploy run rather than explained.
      if (family === 'ldap' && access.unrecorded) {
        const { 'write:mount#*': _recorded, ...rest } = access.unrecorded;
        access.unrecorded = rest;
      }
      return [`Job-${family}`, { items: [...read, ...write], ...access }];
    }),
  ),
  // Not read-only: a lease TTL removed is put back and revoked, a token TTL removed is revoked (its children, leases).
  'Job-table-stream': {
    items: [...read, ...write, transact],
    reads: ['sys', 'mounts', 'token#*'],
    writes: tokenRevocation,
  },
  // The evaluation trigger on the table's stream (stacks/Jobs.ts): the evaluation worker on the scheduler's items
  // alone (a job's allocations read by their links, BatchGetItem; the blocked evaluations room made may wake, and a
  // job's older blocked one, from the blocked queue).
  'Job-evaluation-trigger': {
    items: [...read, 'dynamodb:BatchGetItem', ...write],
    reads: [scheduler, 'sys'],
    writes: [scheduler],
    dueQueues: ['sched#eval-blocked', 'sched#eval-blocked#*'],
  },
  // Reads whether the stage is initialised and bootstrapped, writes the keyring, the root token (with its accessor and
  // issuer index) and the scheduler's management token.
  // Bootstrapping the scheduler lists its ACL items first (a missing bootstrap marker beside any ACL item is refused).
  'Deploy-first-tokens': {
    items: [...read, 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
    reads: ['sys', scheduler],
    writes: ['sys', 'token#*', 'accessor#*', 'issued#*', scheduler],
  },
};

export function tableAccessOf(functionId: string): TableAccess {
  const access = tableAccess[functionId];
  if (!access) throw new Error(`stacks/permissions.ts: no table access declared for function ${functionId}`);
  return access;
}
