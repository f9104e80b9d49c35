/**
 * An evaluation's plan (Nomad's `structs.Plan`, as its generic scheduler fills it): from the reconciler's decision
 * and the placements, the new allocations (complete but for the indexes the write gives them), the changes of
 * placed ones (stops, in-place updates, a replaced allocation's `NextAllocation`) and the node versions the plan was
 * computed on, for plan apply (`cluster/evaluations/plan-apply.ts`).
 *
 * A replacement carries what the reconciler decided for it: its `PreviousAllocation`, and for a reschedule the
 * `RescheduleTracker` the reconciler computed (Nomad's UpdateRescheduleTracker), the previous allocation's tracker
 * then marked `ok`. A replacement that found no node leaves the allocation it replaces as it is when that one's stop
 * held only if placed (a reschedule, a destructive update: Nomad's PopUpdate), and a failed reschedule marks the
 * previous allocation's tracker `no placement` (Nomad's markFailedToReschedule) so the blocked evaluation retries it.
 */
import { randomUUID } from 'node:crypto';
import type { Allocation } from '../cluster/allocations/model.ts';
import type { StoredAllocation } from '../cluster/allocations/store.ts';
import type { Evaluation } from '../cluster/evaluations/model.ts';
import type { AllocationChange, Plan } from '../cluster/evaluations/plan-apply.ts';
import type { Job } from '../cluster/jobs/model.ts';
import { stopDescriptions } from '../placement/descriptions.ts';
import type { AllocatedResources, Placement, PlacementRequest, Reconciliation } from '../placement/types.ts';

const terminalClient = (alloc: Allocation) =>
  alloc.ClientStatus === 'complete' || alloc.ClientStatus === 'failed' || alloc.ClientStatus === 'lost';

/** Whether the previous allocation's stop holds only when its replacement is placed (else it keeps running). */
const stopsOnlyIfPlaced = (request: PlacementRequest): boolean =>
  request.replacing === 'reschedule' || request.replacing === 'update';

/** The stops a replacement that found no node takes back (a migration's or a lost allocation's stop holds). */
const heldOnlyIfPlaced = new Set<string>([stopDescriptions.rescheduled, stopDescriptions.updating]);

/** The allocation's reschedule tracker with its last reschedule noted (Nomad's annotateRescheduleTracker). */
const annotated = (alloc: Allocation, last: 'ok' | 'no placement'): Allocation['RescheduleTracker'] => ({
  Events: alloc.RescheduleTracker?.Events ?? null,
  LastReschedule: last,
});

/** The reconciliation and placements as a plan: new allocations, stops, in-place updates, follow-up marks. */
export function planOf(
  evaluation: Evaluation,
  job: Job | undefined,
  reconciliation: Reconciliation,
  placements: Placement[],
  versions: Map<string, number>,
  nowMs: number,
  /** Per allocation updated in place, the resources it holds at the new version (else it keeps its own). */
  inplaceResources: Map<string, AllocatedResources> = new Map(),
): Plan {
  const nowNs = nowMs * 1e6;
  const place: StoredAllocation[] = [];
  const update: AllocationChange[] = [];
  const placedRequests = new Set(placements.map((placement) => placement.request));
  // The allocations whose replacement found no node and whose stop held only if it did: they are not stopped.
  const kept = new Set<string>();
  for (const request of reconciliation.place) {
    const previous = request.previousAlloc;
    if (placedRequests.has(request) || !previous || !stopsOnlyIfPlaced(request)) continue;
    kept.add(previous.ID);
    if (request.replacing === 'reschedule')
      update.push({
        id: previous.ID,
        nodeId: previous.NodeID,
        change: (current) => ({
          ...current,
          RescheduleTracker: annotated(current, 'no placement'),
          ModifyTime: nowNs,
        }),
      });
  }
  for (const placement of placements) {
    if (!job) break;
    const previous = placement.request.previousAlloc;
    const id = randomUUID();
    place.push({
      ID: id,
      Namespace: job.Namespace,
      EvalID: evaluation.ID,
      Name: placement.request.name,
      NodeID: placement.node.ID,
      NodeName: placement.node.Name,
      JobID: job.ID,
      JobVersion: job.Version,
      JobType: job.Type,
      Job: null,
      TaskGroup: placement.request.group,
      AllocatedResources: placement.resources,
      Metrics: placement.metrics,
      DesiredStatus: 'run',
      DesiredDescription: '',
      DesiredTransition: { Migrate: null, Reschedule: null, ForceReschedule: null, NoShutdownDelay: null },
      ClientStatus: 'pending',
      ClientDescription: '',
      TaskStates: null,
      DeploymentID: reconciliation.deploymentId ?? '',
      DeploymentStatus: placement.request.canary
        ? { Healthy: null, Timestamp: new Date(nowMs).toISOString(), Canary: true, ModifyIndex: 0 }
        : null,
      PreviousAllocation: previous?.ID ?? '',
      NextAllocation: '',
      RescheduleTracker: placement.request.rescheduleTracker ?? null,
      FollowupEvalID: '',
      ...(placement.preempted ? { PreemptedAllocations: placement.preempted.map((alloc) => alloc.ID) } : {}),
      CreateIndex: 0,
      ModifyIndex: 0,
      AllocModifyIndex: 0,
      CreateTime: nowNs,
      ModifyTime: nowNs,
    });
    // Nomad's AppendPreemptedAlloc: each evicted allocation, on its node, in the same write as this placement.
    for (const evicted of placement.preempted ?? []) {
      update.push({
        id: evicted.ID,
        nodeId: evicted.NodeID,
        change: (current) => ({
          ...current,
          DesiredStatus: 'evict',
          DesiredDescription: `Preempted by alloc ID ${id}`,
          PreemptedByAllocation: id,
          ModifyTime: nowNs,
        }),
      });
    }
    const rescheduled = placement.request.rescheduleTracker !== undefined;
    if (previous)
      update.push({
        id: previous.ID,
        nodeId: previous.NodeID,
        change: (current) => ({
          ...current,
          NextAllocation: id,
          ...(rescheduled ? { RescheduleTracker: annotated(current, 'ok') } : {}),
          ModifyTime: nowNs,
        }),
      });
  }
  for (const stop of reconciliation.stop) {
    if (kept.has(stop.alloc.ID) && heldOnlyIfPlaced.has(stop.description)) continue;
    update.push({
      id: stop.alloc.ID,
      nodeId: stop.alloc.NodeID,
      change: (current) => ({
        ...current,
        DesiredStatus: 'stop',
        DesiredDescription: stop.description,
        ...(stop.clientStatus && !terminalClient(current) ? { ClientStatus: stop.clientStatus } : {}),
        ModifyTime: nowNs,
      }),
    });
  }
  for (const updated of reconciliation.inplace)
    update.push({
      id: updated.ID,
      nodeId: updated.NodeID,
      change: (current) => ({
        ...current,
        EvalID: updated.EvalID,
        JobVersion: updated.JobVersion,
        AllocatedResources: inplaceResources.get(updated.ID) ?? updated.AllocatedResources,
        DeploymentID: updated.DeploymentID,
        DeploymentStatus: updated.DeploymentStatus,
        ModifyTime: nowNs,
      }),
    });
  // A stop and a replacement's NextAllocation may touch one allocation: the changes compose, in order.
  const merged = new Map<string, AllocationChange>();
  for (const change of update) {
    const before = merged.get(change.id);
    merged.set(
      change.id,
      before ? { ...change, change: (current, index) => change.change(before.change(current, index), index) } : change,
    );
  }
  const touched = new Set([...place.map((alloc) => alloc.NodeID), ...[...merged.values()].map((c) => c.nodeId)]);
  return {
    place,
    update: [...merged.values()],
    deployments: { created: reconciliation.deployment, updates: reconciliation.deploymentUpdates },
    nodeVersions: new Map([...touched].map((node) => [node, versions.get(node) ?? 0])),
  };
}
