/**
 * Every key the scheduler writes to the one table, in one place. A partition (`pk`) per kind of item; the sort
 * key (`sk`) is the item's own ID or name unless a function here says otherwise.
 */

/** The service-wide index, the per-table indexes and the bootstrap marker. */
export const META_PK = 'sched#meta';
/** `sk` of the service-wide index (an atomic counter). */
export const INDEX_SK = 'index';
/** `sk` of the marker that ACL bootstrap was done (holds the index it was done at). */
export const BOOTSTRAP_SK = 'bootstrap';
/** `sk` of a table's index, read by blocking queries. */
export const tableIndexSk = (table: string): string => `table#${table}`;

/**
 * One of the places a token (or another waiter a route names) holds while a blocking query of it waits
 * (`http/blocking.ts`): `sk` the place's number; the item holds its holder and when its wait ends.
 */
export const waitSlotKey = (waiter: string, slot: number): { pk: string; sk: string } => ({
  pk: `sched#wait#${waiter}`,
  sk: `slot#${slot}`,
});

/** The event buffer: one item per index, `sk` the zero-padded index. */
export const EVENT_PK = 'sched#event';
export const eventKey = (index: number): string => String(index).padStart(16, '0');

/** ACL tokens by accessor ID. */
export const TOKEN_PK = 'sched#token';
/** A token's secret (keyed hash) → its accessor ID. */
export const SECRET_PK = 'sched#secret';
/** The `due` index queue of tokens with an expiration time. */
export const TOKEN_EXPIRY_QUEUE = 'sched#token-expiry';

/** ACL policies by name. */
export const POLICY_PK = 'sched#policy';

/** ACL roles by ID. */
export const ROLE_PK = 'sched#role';
/** A role's name → its ID (a name is unique). */
export const ROLE_NAME_PK = 'sched#role-name';

/** ACL auth methods by name. */
export const AUTH_METHOD_PK = 'sched#auth-method';

/** ACL binding rules by ID. */
export const BINDING_RULE_PK = 'sched#binding-rule';

/** A pending OIDC login (`acl/oidc/auth-url` to `acl/oidc/complete-auth`) by its state; expires with the table's TTL. */
export const OIDC_STATE_PK = 'sched#oidc-state';

/** Node pools by name (the built-in `all` and `default` are never stored: `cluster/node-pools/model.ts`). */
export const NODE_POOL_PK = 'sched#node-pool';

/** Namespaces by name (`default` is stored only once it is changed: `cluster/namespaces/model.ts`). */
export const NAMESPACE_PK = 'sched#namespace';

/**
 * Jobs (part 2 of the cluster writes them): one partition per namespace, the job's ID the sort key, each item a
 * Nomad `Job` with at least `ID`, `Namespace`, `NodePool` and `Status`. Namespace and node-pool deletion read it
 * (`cluster/jobs-in-use.ts`): a namespace or pool with a job whose Status is not `dead` is in use.
 */
export const jobPk = (namespace: string): string => `sched#job#${namespace}`;

/**
 * Job summaries (`cluster/jobs/summary.ts`): one partition per namespace, the job's ID the sort key, each item a
 * Nomad `JobSummary` (counts only), so the jobs list reads a namespace's summaries in one Query.
 */
export const jobSummaryPk = (namespace: string): string => `sched#job-summary#${namespace}`;

/** Cluster nodes by ID, sharded 16 ways by the ID (`storage/due.ts` `shardKey`): the full Node, its SecretID removed. */
export const NODE_PK = 'sched#node';
/**
 * A node's liveness and credentials by ID, sharded like the nodes: its SecretID's keyed hash, its status and its
 * heartbeat deadline. Small, so a heartbeat that changes nothing writes one of these (1 WCU) and nothing else.
 */
export const NODE_BEAT_PK = 'sched#node-beat';
/**
 * The heartbeat sweep's lease (`cluster/nodes/sweep-lease.ts`): one item, `sk` `lease`, holding until when the last
 * sweep that ran inside a heartbeat holds it. A partition of its own, apart from the index's hot `META_PK`.
 */
export const NODE_SWEEP_PK = 'sched#node-sweep';
export const NODE_SWEEP_LEASE_SK = 'lease';
/**
 * When the garbage collection last ran from the sweep (`cluster/system/gc-interval.ts`): one item, `sk` `last`, so
 * processes sweeping every second or every minute collect once per interval between them.
 */
export const GC_PK = 'sched#gc';
export const GC_LAST_SK = 'last';
/**
 * `sk` (in `GC_PK`) of the forced collection requested by `PUT /v1/system/gc` and not yet run
 * (`cluster/system/forced-gc.ts`): one item, so requests made before a run starts are one run.
 */
export const FORCED_GC_SK = 'forced';
/** `sk` (in `META_PK`) of the count of registered nodes, kept by registration and purge (the heartbeat TTL reads it). */
export const NODE_COUNT_SK = 'nodes#count';
/**
 * `sk` (in `META_PK`) of the index of the last write whose beat marks did not fit its transaction
 * (`scheduler/beat-marks.ts`): a snapshot that sees it move trusts no mark it held.
 */
export const MARKS_OVERFLOW_SK = 'marks#overflow';

/**
 * A job's versions (`cluster/jobs/store.ts`): one partition per job (`<namespace>#<id>`), `sk` the zero-padded
 * version, each item the whole Job at that version; the last six are kept, as Nomad's JobTrackedVersions.
 */
export const jobVersionPk = (namespace: string, id: string): string => `sched#job-version#${namespace}#${id}`;
export const jobVersionSk = (version: number): string => String(version).padStart(12, '0');

/** Evaluations by ID, sharded 16 ways by the ID (`storage/due.ts` `shardKey`). */
export const EVAL_PK = 'sched#eval';

/**
 * Service registrations (`cluster/services/store.ts`): one partition per namespace, `sk` `<service name>#<ID>` (a
 * service name is an RFC 1123 label, so it holds no `#`), so a namespace's list is one query and a service's
 * registrations one prefix.
 */
export const servicePk = (namespace: string): string => `sched#service#${namespace}`;
export const serviceSk = (serviceName: string, id: string): string => `${serviceName}#${id}`;
/**
 * An allocation's registrations, `sk` the registration's ID, each naming its namespace and service name: how a
 * registration is found by ID (the ID carries its allocation's) and how a terminal allocation's are removed.
 */
export const serviceAllocPk = (allocId: string): string => `sched#service-alloc#${allocId}`;

/**
 * Allocations (`cluster/allocations/store.ts`). The allocation itself lives in its node's partition, so the node's
 * allocation map, plan apply's fit check and the placement snapshot read a node's allocations in one strongly
 * consistent Query; two small links, written once at placement (an allocation never changes node or job), find it
 * by job (`allocJobPk`, one Query then a batch read) and by ID (`ALLOC_ID_PK`, sharded 16 ways by the ID; every
 * shard read lists them all).
 */
export const ALLOC_NODE_PREFIX = 'sched#alloc#node#';
export const allocNodePk = (nodeId: string): string => `${ALLOC_NODE_PREFIX}${nodeId}`;
export const allocJobPk = (namespace: string, jobId: string): string => `sched#alloc#job#${namespace}#${jobId}`;
export const ALLOC_ID_PK = 'sched#alloc#id';

/**
 * Where capacity appeared (`cluster/nodes/capacity.ts`): one item per write that made room on a node (a node became
 * schedulable, its client reported an allocation ended), sharded 16 ways by the node's ID, its sort key the write's
 * padded index and the node's ID, so what appeared since a blocked evaluation's snapshot is one range read a shard.
 */
export const CAPACITY_PK = 'sched#capacity';

/**
 * The evaluation queue: a pending evaluation also carries `duePk` (`EVAL_QUEUE`, sharded by its ID) and `dueSk`
 * (its creation second and ID) on the `due` index, removed when it leaves `pending`; the worker reads the queue.
 */
export const EVAL_QUEUE = 'sched#eval-queue';
/** Blocked evaluations, likewise: run again when a node or an allocation changed since they were computed. */
export const EVAL_BLOCKED = 'sched#eval-blocked';
/**
 * A job's evaluation lease (`EVAL_LEASE_PK`, sharded 16 ways by `<namespace>#<job ID>`, the sort key): the one
 * evaluation of a job being run (Nomad's broker runs one per job at a time), taken with a conditional put and
 * released by its holder; an expired lease may be taken over (a worker that died), counting the delivery.
 */
export const EVAL_LEASE_PK = 'sched#eval-lease';

/**
 * Deployments (`cluster/deployments/store.ts`) by ID, sharded 16 ways by the ID (`storage/due.ts` `shardKey`), each a
 * Nomad `Deployment`; a job's are found by listing them (as evaluations are).
 */
export const DEPLOYMENT_PK = 'sched#deployment';
/**
 * The deployment watcher's queue: an active deployment also carries `duePk` (`DEPLOYMENT_DUE`, sharded by its ID) and
 * `dueSk` (the second its next check is due and its ID) on the `due` index; the sweep checks only those due.
 */
export const DEPLOYMENT_DUE = 'sched#deployment-due';

/** The scheduler configuration, one item (`sk` `SCHEDULER_CONFIG_SK`), stored once an operator changes it. */
export const SCHEDULER_CONFIG_PK = 'sched#scheduler-config';
export const SCHEDULER_CONFIG_SK = 'config';
