/** The scheduler service's state and ACL registries, built once per process on the core. */
import { AclAuthMethods } from '../acl/auth-methods/store.ts';
import { AclBindingRules } from '../acl/binding-rules/store.ts';
import { AclPolicies } from '../acl/policies/store.ts';
import { SchedulerAcl } from '../acl/policy-rules.ts';
import { AclRoles } from '../acl/roles/store.ts';
import type { StoredToken } from '../acl/tokens/model.ts';
import { AclTokens } from '../acl/tokens/store.ts';
import { Allocations } from '../cluster/allocations/store.ts';
import { jobsInPool } from '../cluster/jobs-in-use.ts';
import { isActive } from '../cluster/deployments/model.ts';
import { Deployments } from '../cluster/deployments/store.ts';
import { DeploymentWatcher } from '../cluster/deployments/watcher.ts';
import { Evaluations } from '../cluster/evaluations/store.ts';
import { Jobs } from '../cluster/jobs/store.ts';
import { systemJobsFor } from '../cluster/jobs/system-jobs.ts';
import { Namespaces } from '../cluster/namespaces/store.ts';
import { NodePools } from '../cluster/node-pools/store.ts';
import { SchedulerConfigs } from '../cluster/scheduler-config/store.ts';
import { NodeIdentities } from '../client/identity.ts';
import { ClusterNodes } from '../cluster/nodes/store.ts';
import { NodeSweepLease } from '../cluster/nodes/sweep-lease.ts';
import { ServiceRegistrations } from '../cluster/services/store.ts';
import { EventBroker } from '../events/broker.ts';
import { nodeSecretHash, type SchedulerBase, schedulerSecretHash } from './secret-hashes.ts';
import { type PendingEvent, SchedulerState } from '../state.ts';

export interface SchedulerOptions {
  /** How long events stay in the buffer (seconds). */
  eventTtlSeconds?: number;
  /** Interval of the stream's `{}` heartbeat (ms, default 10 s). */
  heartbeatMs?: number;
  /** How often the event broker looks for other processes' events (ms, default 200). */
  eventPollMs?: number;
  /** End each event stream after this long (ms): a Lambda response stream must end before the time limit. */
  streamLimitMs?: number;
  /** Longest wait of a blocking query (seconds; Nomad's 300 when unset). Behind API Gateway's 30 s limit, 25. */
  maxQueryWaitSeconds?: number;
  /** Longest wait of a blocking query that holds no place of a token (seconds, default 1: `http/blocking.ts`). */
  anonymousWaitSeconds?: number;
  /** Blocking queries one token may have waiting at once, across every process (default 4). */
  waitsPerToken?: number;
  /** How often a process with blocked queries reads their tables' index items (ms, default 1000). */
  indexPollMs?: number;
}

/** Who is calling: the token (none for anonymous), its policies (direct and through roles) and the ACL they make. */
export interface SchedulerCaller {
  management: boolean;
  token?: StoredToken;
  policyNames: string[];
  acl: SchedulerAcl;
}

/** What the scheduler is built on: the table, the keyring that hashes its secrets, time and the logger (the secrets service's Core has them). */

const schedulers = new WeakMap<SchedulerBase, Scheduler>();

/** The one scheduler of a core in this process (apps on the same core share its event broker and wake-ups). */
export function schedulerFor(core: SchedulerBase, options: SchedulerOptions = {}): Scheduler {
  let scheduler = schedulers.get(core);
  if (!scheduler) {
    scheduler = new Scheduler(core, options);
    schedulers.set(core, scheduler);
  }
  return scheduler;
}

/**
 * The publish API for the other scheduler components (Job, Allocation, Node, …): the events get the next index
 * and enter the buffer every stream reads.
 */
export function publishEvents(core: SchedulerBase, events: PendingEvent[]): Promise<number> {
  return schedulerFor(core).state.publish(events);
}

export class Scheduler {
  readonly state: SchedulerState;
  readonly policies: AclPolicies;
  readonly roles: AclRoles;
  readonly tokens: AclTokens;
  readonly authMethods: AclAuthMethods;
  readonly bindingRules: AclBindingRules;
  readonly events: EventBroker;
  readonly nodePools: NodePools;
  readonly namespaces: Namespaces;
  readonly nodes: ClusterNodes;
  /** The node sweep that accepted heartbeats run when its lease lapses (`cluster/nodes/sweep-lease.ts`). */
  readonly nodeSweep: NodeSweepLease;
  readonly identities: NodeIdentities;
  readonly evaluations: Evaluations;
  readonly deployments: Deployments;
  /** Nomad's deployment watcher: promote, allocation health, and the checks after reports and in the sweep. */
  readonly deploymentWatcher: DeploymentWatcher;
  readonly jobs: Jobs;
  readonly services: ServiceRegistrations;
  readonly allocations: Allocations;
  /** The scheduler configuration (`/v1/operator/scheduler/configuration`): the algorithm and preemption. */
  readonly schedulerConfig: SchedulerConfigs;

  constructor(
    readonly core: SchedulerBase,
    readonly options: SchedulerOptions = {},
  ) {
    // Each registry gets only the ones it reads, built before it: policies ← roles ← tokens; auth methods ← binding rules.
    this.state = new SchedulerState(core.store, core.clock, { eventTtlSeconds: options.eventTtlSeconds });
    this.policies = new AclPolicies(this.state);
    this.roles = new AclRoles(this.state, this.policies);
    this.tokens = new AclTokens(this.state, this.roles, (secret) => schedulerSecretHash(core, secret), core.log);
    this.authMethods = new AclAuthMethods(this.state, core.keyring);
    this.bindingRules = new AclBindingRules(this.state, this.authMethods);
    this.events = new EventBroker(this.state, { pollMs: options.eventPollMs ?? 200 });
    this.nodePools = new NodePools(this.state);
    this.namespaces = new Namespaces(this.state);
    this.schedulerConfig = new SchedulerConfigs(this.state);
    // A pool with a job that is not dead is in use (Nomad's nodePoolRegionsInUse); the node store adds its own check.
    this.nodePools.addUsageCheck(async (pool) => {
      const namespaces = (await this.namespaces.list()).map((namespace) => namespace.Name);
      const live = (await jobsInPool(core.store, namespaces, pool)).some((job) => job.Status !== 'dead');
      return live ? `node pool ${JSON.stringify(pool)} has non-terminal jobs` : undefined;
    });
    this.nodes = new ClusterNodes(this.state, this.nodePools, (id, secret) => nodeSecretHash(core, id, secret));
    this.nodeSweep = new NodeSweepLease(this.state, this.nodes, core.log);
    this.identities = new NodeIdentities(core.keyring, core.clock);
    this.evaluations = new Evaluations(this.state);
    this.jobs = new Jobs(this.state, this.namespaces, this.nodePools, this.evaluations);
    this.deployments = new Deployments(this.state, this.jobs, this.evaluations);
    this.services = new ServiceRegistrations(this.state);
    this.allocations = new Allocations(this.state, this.jobs, this.evaluations, this.deployments);
    this.deployments.allocationsWith((namespace, jobId) => this.allocations.ofJob(namespace, jobId));
    this.allocations.activeDeploymentWith(async (namespace, jobId) =>
      (await this.deployments.ofJob(namespace, jobId)).some(isActive),
    );
    this.deploymentWatcher = new DeploymentWatcher(
      this.state,
      this.deployments,
      this.jobs,
      this.evaluations,
      this.allocations,
    );
    this.allocations.drainingNodesWith(async (ids) => {
      const nodes = await Promise.all(ids.map((id) => this.nodes.get(id)));
      return new Set(nodes.filter((node) => node?.DrainStrategy).map((node) => node?.ID as string));
    });
    this.nodes.evaluateNodesWith(async (node, index, trigger) =>
      this.allocations.nodeEvaluations(
        node.ID,
        index,
        trigger,
        node.Status === 'ready' && trigger === 'node-update'
          ? await systemJobsFor(node, this.namespaces, this.jobs)
          : [],
      ),
    );
  }

  /** The caller of a token secret: anonymous without one; an unknown or expired token is refused (403). */
  async resolve(secret: string | undefined): Promise<SchedulerCaller> {
    if (!secret) {
      const rules = await this.policies.rules(['anonymous']);
      return {
        management: false,
        policyNames: rules.length > 0 ? ['anonymous'] : [],
        acl: SchedulerAcl.fromRules(rules),
      };
    }
    const token = await this.tokens.bySecret(secret);
    return this.callerOf(token);
  }

  async callerOf(token: StoredToken): Promise<SchedulerCaller> {
    if (token.Type === 'management')
      return { management: true, token, policyNames: [], acl: SchedulerAcl.managementAcl };
    const names = new Set(token.Policies);
    for (const link of token.Roles) {
      const role = await this.roles.get(link.ID);
      for (const policy of role?.Policies ?? []) names.add(policy.Name);
    }
    const policyNames = [...names];
    return {
      management: false,
      token,
      policyNames,
      acl: SchedulerAcl.fromRules(await this.policies.rules(policyNames)),
    };
  }
}
