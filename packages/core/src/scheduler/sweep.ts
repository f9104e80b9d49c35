import { AclPolicies } from './acl/policies/store.ts';
import { AclRoles } from './acl/roles/store.ts';
import { AclTokens } from './acl/tokens/store.ts';
import { Allocations } from './cluster/allocations/store.ts';
import { Deployments } from './cluster/deployments/store.ts';
import { DeploymentWatcher } from './cluster/deployments/watcher.ts';
import { Evaluations } from './cluster/evaluations/store.ts';
import { Jobs } from './cluster/jobs/store.ts';
import { Namespaces } from './cluster/namespaces/store.ts';
import { NodePools } from './cluster/node-pools/store.ts';
import { ClusterNodes } from './cluster/nodes/store.ts';
import { NodeSweepLease } from './cluster/nodes/sweep-lease.ts';
import { nodeSecretHash, type SchedulerBase, schedulerSecretHash } from './composition/secret-hashes.ts';
import { SchedulerState } from './state.ts';
import { EvaluationWorker } from './worker/evaluation-worker.ts';

/**
 * The scheduler's scheduled work: its expired ACL tokens, the nodes whose heartbeat is late (marked `down`: see
 * `cluster/nodes/store.ts` `expireMissed`, with a `node-update` evaluation for each job on them; heartbeats also sweep
 * between runs, `cluster/nodes/sweep-lease.ts`), the evaluations due (`worker/evaluation-worker.ts`: under `npm start`
 * every second, in AWS every minute from EventBridge), the active deployments (`cluster/deployments/watcher.ts`) and
 * the events past their expiry. Built on the state alone, so
 * the sweep job carries none of the scheduler's HTTP surface (login, OIDC, binding-rule selectors).
 */
export async function sweepScheduler(core: SchedulerBase): Promise<void> {
  const state = new SchedulerState(core.store, core.clock);
  const roles = new AclRoles(state, new AclPolicies(state));
  await new AclTokens(state, roles, (secret) => schedulerSecretHash(core, secret), core.log).sweepExpired();
  const pools = new NodePools(state);
  const evaluations = new Evaluations(state);
  const jobs = new Jobs(state, new Namespaces(state), pools, evaluations);
  const deployments = new Deployments(state, jobs, evaluations);
  const allocations = new Allocations(state, jobs, evaluations, deployments);
  const nodes = new ClusterNodes(state, pools, (id, secret) => nodeSecretHash(core, id, secret));
  // The sweep only marks nodes down: their jobs are evaluated, no system job is added.
  nodes.evaluateNodesWith((node, index, trigger) => allocations.nodeEvaluations(node.ID, index, trigger));
  // The backstop of the sweep heartbeats run (`cluster/nodes/sweep-lease.ts`): every late node, lease or no lease.
  await new NodeSweepLease(state, nodes, core.log).sweepNow();
  await new EvaluationWorker({ state, evaluations, jobs, nodes, allocations, deployments }, (error, evaluation) =>
    core.log.error('evaluation failed; it is delivered again', { evaluation: evaluation.ID, error: String(error) }),
  ).runDue();
  // Nomad's deployment watcher, for what no report triggers: progress deadlines, and checks a report's process missed.
  await new DeploymentWatcher(state, deployments, jobs, evaluations, allocations).checkAll();
  await state.sweepEvents();
}
