/**
 * System and sysbatch jobs: one allocation of each task group on every node the job may run on (Nomad's
 * `NodeReconciler`, `scheduler/reconciler/reconcile_node.go`, and the system scheduler's `computeJobAllocs` and
 * `evictAndPlace`, `scheduler/scheduler_system.go`). An allocation on a node that left the set stops, one on a down or
 * collected node is lost (not replaced: the node is gone), one marked to migrate stops, a changed spec updates in
 * place or destructively (at most `max_parallel` at a time), and a sysbatch allocation that ran is not run again
 * until the job changes. With no deployment here, `Place` counts the candidates as Nomad's does before it learns
 * which nodes are infeasible (the caller takes those off).
 */
import type { Allocation } from '../cluster/allocations/model.ts';
import { isTerminal } from '../cluster/allocations/model.ts';
import type { Job, TaskGroup } from '../cluster/jobs/model.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import { allocName } from './alloc-names.ts';
import { stopDescriptions } from './descriptions.ts';
import { emptyUpdates } from './group-common.ts';
import { ranSuccessfully } from './reschedule.ts';
import { lostAfterStop } from './tainted.ts';
import type { DesiredUpdates, PlacementRequest, ReconcileInput, Reconciliation } from './types.ts';
import { inPool, inplaceUpdated, updateKind } from './updates.ts';

/** Nomad's Node.Ready: ready, not draining, eligible. */
const ready = (node: ClusterNode): boolean =>
  node.Status === 'ready' && node.DrainStrategy === null && node.SchedulingEligibility === 'eligible';
const tainted = (node: ClusterNode | undefined): boolean =>
  !node || node.Status === 'down' || node.Status === 'disconnected' || node.DrainStrategy !== null;

interface Tuple {
  name: string;
  group: TaskGroup;
  alloc: Allocation;
}

export function reconcileSystem(input: ReconcileInput, job: Job, nodes: Map<string, ClusterNode>): Reconciliation {
  const result: Reconciliation = {
    place: [],
    stop: [],
    inplace: [],
    desiredTGUpdates: {},
    followups: [],
    deploymentUpdates: [],
  };
  result.stop.push(...lostAfterStop(input.allocs, nodes));
  const updates = (group: string): DesiredUpdates => {
    result.desiredTGUpdates[group] ??= emptyUpdates();
    return result.desiredTGUpdates[group];
  };
  const versions = new Map(input.jobVersions.map((version) => [version.Version, version]));
  const jobOf = (alloc: Allocation) => (alloc.JobVersion === job.Version ? job : versions.get(alloc.JobVersion));
  const required = new Map<string, TaskGroup>();
  if (!job.Stop)
    for (const group of job.TaskGroups)
      for (let index = 0; index < group.Count; index++) required.set(allocName(job.Name, group.Name, index), group);
  const eligible = new Map((job.Stop ? [] : (input.eligibleNodes ?? [])).map((node) => [node.ID, node]));
  const live = input.allocs.filter((alloc) => !isTerminal(alloc));
  // The latest terminal allocation of each name on each node.
  const terminal = new Map<string, Allocation>();
  for (const alloc of input.allocs) {
    if (!isTerminal(alloc)) continue;
    const key = `${alloc.NodeID}\n${alloc.Name}`;
    const held = terminal.get(key);
    if (!held || held.CreateIndex < alloc.CreateIndex) terminal.set(key, alloc);
  }
  const liveByNode = new Map<string, Allocation[]>();
  for (const alloc of live) {
    const list = liveByNode.get(alloc.NodeID);
    if (list) list.push(alloc);
    else liveByNode.set(alloc.NodeID, [alloc]);
  }
  const nodeIds = [...new Set([...liveByNode.keys(), ...eligible.keys()])].sort();
  const place: Array<PlacementRequest & { group: string }> = [];
  const changed: Tuple[] = [];
  const ignore = (group: string) => updates(group).Ignore++;
  for (const nodeId of nodeIds) {
    const node = nodes.get(nodeId) ?? eligible.get(nodeId);
    const onNode = (liveByNode.get(nodeId) ?? []).sort((a, b) => (a.Name < b.Name ? -1 : a.Name > b.Name ? 1 : 0));
    const existing = new Set(onNode.map((alloc) => alloc.Name));
    for (const alloc of onNode) {
      const group = required.get(alloc.Name);
      if (!group) {
        result.stop.push({ alloc, description: stopDescriptions.notNeeded });
        updates(alloc.TaskGroup).Stop++;
      } else if (alloc.DesiredTransition.Migrate === true) {
        result.stop.push({ alloc, description: stopDescriptions.nodeTainted });
        updates(group.Name).Migrate++;
      } else if (alloc.ClientStatus === 'unknown') ignore(group.Name);
      else if (tainted(node)) {
        if (job.Type === 'sysbatch' && ranSuccessfully(alloc)) ignore(group.Name);
        else if (!node || node.Status === 'down' || node.Status === 'disconnected')
          result.stop.push({ alloc, description: stopDescriptions.lost, clientStatus: 'lost' });
        else ignore(group.Name);
      } else if (node && !ready(node) && inPool(node, job.NodePool)) {
        if (alloc.JobVersion !== job.Version) {
          result.stop.push({ alloc, description: stopDescriptions.notNeeded });
          updates(group.Name).Stop++;
        } else ignore(group.Name);
      } else if (!eligible.has(nodeId)) {
        result.stop.push({ alloc, description: stopDescriptions.notNeeded });
        updates(group.Name).Stop++;
      } else if (alloc.JobVersion !== job.Version) changed.push({ name: alloc.Name, group, alloc });
      else ignore(group.Name);
    }
    for (const [name, group] of required) {
      if (existing.has(name)) continue;
      const previous = terminal.get(`${nodeId}\n${name}`);
      if (job.Type === 'sysbatch' && previous) {
        if (previous.JobVersion !== job.Version) changed.push({ name, group, alloc: previous });
        else ignore(group.Name);
        continue;
      }
      if (tainted(node) || !eligible.has(nodeId)) continue;
      place.push({ group: group.Name, name, nodeId, ...(previous ? { previousAlloc: previous } : {}) });
      updates(group.Name).Place++;
    }
  }

  // In place where no restart is needed; the rest destructively, at most max_parallel per group (evictAndPlace).
  const destructive: Tuple[] = [];
  for (const tuple of changed) {
    const node = nodes.get(tuple.alloc.NodeID) ?? eligible.get(tuple.alloc.NodeID);
    const kind = isTerminal(tuple.alloc)
      ? updateKind(tuple.alloc, jobOf(tuple.alloc), job, node, input.fitsInPlace) === 'destructive'
        ? 'destructive'
        : 'terminal'
      : updateKind(tuple.alloc, jobOf(tuple.alloc), job, node, input.fitsInPlace);
    if (kind === 'destructive') destructive.push(tuple);
    else {
      updates(tuple.group.Name).InPlaceUpdate++;
      updates(tuple.group.Name).Place++;
      if (kind === 'inplace') result.inplace.push(inplaceUpdated(tuple.alloc, job, input.evaluation.ID));
    }
  }
  const limits = new Map<string, number>();
  const jobMax = Number((job.Update as { MaxParallel?: unknown } | null)?.MaxParallel ?? 0);
  for (const group of job.TaskGroups) {
    const groupMax = Number((group.Update as { MaxParallel?: unknown } | null)?.MaxParallel ?? 0);
    limits.set(group.Name, groupMax > 0 ? groupMax : jobMax > 0 ? jobMax : destructive.length);
  }
  for (const tuple of destructive) {
    const group = tuple.group.Name;
    updates(group).DestructiveUpdate++;
    updates(group).Place++;
    const limit = limits.get(group) ?? 0;
    if (limit <= 0) continue;
    limits.set(group, limit - 1);
    // A sysbatch allocation already told to stop is replaced without being stopped again.
    if (tuple.alloc.DesiredStatus === 'run')
      result.stop.push({ alloc: tuple.alloc, description: stopDescriptions.updating });
    place.push({
      group,
      name: tuple.name,
      nodeId: tuple.alloc.NodeID,
      previousAlloc: tuple.alloc,
      replacing: 'update',
    });
  }
  // Nomad counts the ignored allocations among a group's candidates too.
  for (const counts of Object.values(result.desiredTGUpdates)) counts.Place += counts.Ignore;
  result.place = place;
  return result;
}
