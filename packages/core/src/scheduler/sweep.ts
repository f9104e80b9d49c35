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
import { GarbageCollector } from './cluster/system/gc.ts';
import { isForcedGcRequest, runForcedGc } from './cluster/system/forced-gc.ts';
import { claimGcRun } from './cluster/system/gc-interval.ts';
import { forcedGcThresholds, type GcThresholds, nomadGcThresholds } from './cluster/system/thresholds.ts';
import { nodeSecretHash, type SchedulerBase, schedulerSecretHash } from './composition/secret-hashes.ts';
import { SchedulerConfigs } from './cluster/scheduler-config/store.ts';
import { SchedulerState } from './state.ts';
import {
  runTriggered,
  type StreamChange,
  type TriggerOptions,
  type TriggerResult,
} from './worker/evaluation-trigger.ts';
import { EvaluationWorker, type WorkerParts } from './worker/evaluation-worker.ts';

/**
 * The scheduler's scheduled work: its expired ACL tokens, the nodes whose heartbeat is late (marked `down`: see
 * `cluster/nodes/store.ts` `expireMissed`, with a `node-update` evaluation for each job on them; heartbeats also sweep
 * between runs, `cluster/nodes/sweep-lease.ts`), the evaluations due (`worker/evaluation-worker.ts`: under `npm start`
 * every second, in AWS every minute from EventBridge; the backstop of the table stream's trigger,
 * `runTriggeredEvaluations`, which runs them as they are written), the deployments due on the watcher's queue
 * (`cluster/deployments/watcher.ts` `checkDue`), the garbage collection of finished jobs, evaluations, allocations, deployments
 * and down nodes older than the operator's `gc` thresholds (`cluster/system/gc.ts`; Nomad's defaults when unsaid;
 * once every five minutes across processes, `cluster/system/gc-interval.ts`), a forced collection requested and not
 * yet run (`cluster/system/forced-gc.ts`, the stream consumer's backstop) and the events past
 * their expiry. Built on the state alone, so the sweep job carries none of the scheduler's HTTP surface (login, OIDC,
 * binding-rule selectors).
 */
export async function sweepScheduler(
  core: SchedulerBase,
  /** `gc`: the thresholds, or `false` to skip the collection (a setting that did not parse: `entry-points/expiry-sweeps.ts`). */
  options: { gc?: GcThresholds | false | undefined } = {},
): Promise<void> {
  const state = new SchedulerState(core.store, core.clock);
  const roles = new AclRoles(state, new AclPolicies(state));
  await new AclTokens(state, roles, (secret) => schedulerSecretHash(core, secret), core.log).sweepExpired();
  const parts = workerParts(core, state);
  // The backstop of the sweep heartbeats run (`cluster/nodes/sweep-lease.ts`): every late node, lease or no lease.
  await new NodeSweepLease(state, parts.nodes, core.log).sweepNow();
  await workerOf(core, parts).runDue();
  // Nomad's deployment watcher, for what no report triggers: the deployments due on its queue (a progress deadline
  // reached, a write whose own check did not run). Once per collection interval, deployments written before the queue
  // existed are put on it (one listing of the deployments, which the collection makes anyway).
  const { deployments, jobs, evaluations, allocations } = parts;
  const periodic = await claimGcRun(core.store, core.clock.now());
  if (periodic) await deployments.queueUnqueued();
  await new DeploymentWatcher(state, deployments, jobs, evaluations, allocations).checkDue();
  // A forced collection requested (`PUT /v1/system/gc`) that the stream's consumer did not run: the backstop.
  await runRequestedGc(core, parts);
  if (options.gc !== false && periodic) {
    // What the collection leaves is collected by the next run: its failure is logged, and the events still expire.
    try {
      await collectorOf(parts).collect(options.gc ?? nomadGcThresholds);
    } catch (error) {
      core.log.error('scheduler garbage collection failed; the next sweep runs it again', { error: String(error) });
    }
  }
  await state.sweepEvents();
}

/**
 * The forced collection `PUT /v1/system/gc` requested, run under its claim (`cluster/system/forced-gc.ts`) if one is
 * requested and nobody runs it; returns how many runs it made. A failure is logged and leaves the request for the
 * next consumer or sweep.
 */
export async function runRequestedGc(core: SchedulerBase, parts = workerParts(core)): Promise<number> {
  try {
    return await runForcedGc(core.store, core.clock, () => collectorOf(parts).collect(forcedGcThresholds));
  } catch (error) {
    core.log.error('forced garbage collection failed; it is run again', { error: String(error) });
    return 0;
  }
}

const collectorOf = (parts: WorkerParts) =>
  new GarbageCollector(
    parts.state,
    new Namespaces(parts.state),
    parts.jobs,
    parts.evaluations,
    parts.allocations,
    parts.deployments,
    parts.nodes,
  );

/**
 * The evaluations the table's stream says were written pending, run now (`worker/evaluation-trigger.ts`), with what
 * was due when a change unpaused the broker, and the forced collection when one was requested: what the stream's
 * consumer calls, `functions/jobs/evaluation-trigger.ts` in AWS and the stream poller under `npm start`.
 */
export async function runTriggeredEvaluations(
  core: SchedulerBase,
  changes: readonly StreamChange[],
  options: TriggerOptions = {},
): Promise<TriggerResult> {
  const parts = workerParts(core);
  const result = await runTriggered(workerOf(core, parts), changes, options);
  if (changes.some(isForcedGcRequest)) await runRequestedGc(core, parts);
  return result;
}

/** The stores the evaluation worker runs on, over the scheduler's state. */
export function workerParts(core: SchedulerBase, state = new SchedulerState(core.store, core.clock)): WorkerParts {
  const pools = new NodePools(state);
  const evaluations = new Evaluations(state);
  const jobs = new Jobs(state, new Namespaces(state), pools, evaluations);
  const deployments = new Deployments(state, jobs, evaluations);
  const allocations = new Allocations(state, jobs, evaluations, deployments);
  const nodes = new ClusterNodes(state, pools, (id, secret) => nodeSecretHash(core, id, secret));
  // The sweep only marks nodes down: their jobs are evaluated, no system job is added.
  nodes.evaluateNodesWith((node, index, trigger) => allocations.nodeEvaluations(node.ID, index, trigger));
  return { state, evaluations, jobs, nodes, allocations, deployments, schedulerConfig: new SchedulerConfigs(state) };
}

const workerOf = (core: SchedulerBase, parts: WorkerParts) =>
  new EvaluationWorker(parts, (error, evaluation) =>
    core.log.error('evaluation failed; it is delivered again', { evaluation: evaluation.ID, error: String(error) }),
  );
