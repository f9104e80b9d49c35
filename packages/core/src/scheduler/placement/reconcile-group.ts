/**
 * One task group of a service or batch job reconciled (Nomad's `computeGroup`, `scheduler/reconciler/
 * reconcile_cluster.go`, with no deployment): what is lost stops and is replaced, failed allocations reschedule now or
 * later, a count beyond the group's stops its highest names, changed allocations update in place or destructively
 * (at most the update block's `max_parallel` at a time), migrating ones stop and are placed anew, and the missing ones
 * are placed under the lowest free names. The annotation counts are Nomad's, field by field.
 */
import type { Allocation } from '../cluster/allocations/model.ts';
import type { Job, TaskGroup } from '../cluster/jobs/model.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import { AllocNameIndex, allocIndex } from './alloc-names.ts';
import { stopDescriptions } from './descriptions.ts';
import {
  nextRescheduleTracker,
  penaltyNodeIds,
  type ReschedulePolicy,
  reschedulePolicy,
  splitByRescheduleable,
} from './reschedule.ts';
import { classify } from './tainted.ts';
import type { DesiredUpdates, PlacementRequest, StopDecision } from './types.ts';
import { inplaceUpdated, updateKind } from './updates.ts';

export interface JobContext {
  jobId: string;
  job: Job;
  isBatch: boolean;
  nodes: Map<string, ClusterNode>;
  /** The job of an allocation's version (undefined when that version is no longer stored). */
  jobOf: (alloc: Allocation) => Job | undefined;
  evalId: string;
  now: number;
}

export interface GroupResult {
  place: PlacementRequest[];
  stop: StopDecision[];
  inplace: Allocation[];
  updates: DesiredUpdates;
  /** Failed allocations to reschedule later, and when (ms). */
  later: Array<{ alloc: Allocation; at: number }>;
}

export const emptyUpdates = (): DesiredUpdates => ({
  Ignore: 0,
  Place: 0,
  Migrate: 0,
  Stop: 0,
  InPlaceUpdate: 0,
  DestructiveUpdate: 0,
  Canary: 0,
  Preemptions: 0,
  Reconnect: 0,
  Disconnect: 0,
  RescheduleNow: 0,
  RescheduleLater: 0,
});

const serverTerminal = (alloc: Allocation): boolean =>
  alloc.DesiredStatus === 'stop' || alloc.DesiredStatus === 'evict';

/** Allocations in name-index order (then ID), so that every decision is the same for the same input. */
export function byName(allocs: Iterable<Allocation>, jobId: string): Allocation[] {
  return [...allocs].sort(
    (a, b) =>
      allocIndex(a.Name, jobId, a.TaskGroup) - allocIndex(b.Name, jobId, b.TaskGroup) || a.ID.localeCompare(b.ID),
  );
}

/** Nomad's UpdateStrategy.IsEmpty: no update block, or one with every field unset. */
function updateEmpty(update: unknown): boolean {
  if (typeof update !== 'object' || update === null) return true;
  return Object.values(update).every(
    (value) => value === undefined || value === null || value === 0 || value === '' || value === false,
  );
}

const maxParallel = (group: TaskGroup): number => {
  const update = group.Update as { MaxParallel?: unknown } | null | undefined;
  return typeof update?.MaxParallel === 'number' ? update.MaxParallel : 0;
};

/**
 * Stops every allocation of a group that is removed, scaled to zero or whose job stopped (Nomad's
 * filterAndStopAll): a lost one as lost, the rest as not needed. Answers the stops and the Stop count (all of `set`).
 */
export function stopAll(set: Allocation[], context: Omit<JobContext, 'job'> & { group: TaskGroup | undefined }) {
  const classified = classify(set, {
    jobId: context.jobId,
    group: context.group,
    isBatch: context.isBatch,
    nodes: context.nodes,
    now: context.now,
    groupAllocs: set,
  });
  const stop: StopDecision[] = [
    ...byName([...classified.untainted, ...classified.migrate], context.jobId).map((alloc) => ({
      alloc,
      description: stopDescriptions.notNeeded,
    })),
    ...byName(classified.lost, context.jobId).map((alloc) => ({
      alloc,
      description: stopDescriptions.lost,
      clientStatus: 'lost' as const,
    })),
  ];
  return { stop, count: set.length };
}

export function reconcileGroup(name: string, groupAllocs: Allocation[], context: JobContext): GroupResult {
  const { job, jobId } = context;
  const result: GroupResult = { place: [], stop: [], inplace: [], updates: emptyUpdates(), later: [] };
  const group = job.TaskGroups.find((tg) => tg.Name === name);
  // Nomad's filterServerTerminalAllocs: batch allocations stay (a completed one is not replaced).
  let all = groupAllocs.filter(
    (alloc) => !serverTerminal(alloc) || (context.isBatch && alloc.DesiredTransition.Reschedule !== true),
  );
  if (!group || group.Count === 0) {
    const stopped = stopAll(all, { ...context, group });
    result.stop = stopped.stop;
    result.updates.Stop = stopped.count;
    return result;
  }
  if (context.isBatch) {
    // Terminal allocations of an older version are not counted (Nomad's filterOldTerminalAllocs).
    const old = all.filter((alloc) => alloc.JobVersion < job.Version && isClientOrServerTerminal(alloc));
    result.updates.Ignore += old.length;
    all = all.filter((alloc) => !old.includes(alloc));
  }
  const classified = classify(all, {
    jobId,
    group,
    isBatch: context.isBatch,
    nodes: context.nodes,
    now: context.now,
    groupAllocs,
  });
  result.updates.Ignore += classified.ignore.length;
  const policyOf = (alloc: Allocation): ReschedulePolicy | undefined =>
    reschedulePolicy(context.jobOf(alloc) ?? job, name);
  const split = splitByRescheduleable(classified.untainted, context.isBatch, context.now, context.evalId, policyOf);
  const migrating = splitByRescheduleable(classified.migrate, context.isBatch, context.now, context.evalId, policyOf);
  let untainted = split.untainted;
  let migrate = classified.migrate;
  const rescheduleNow = byName(new Set([...split.now, ...migrating.now]), jobId);
  result.later = [...split.later, ...migrating.later];
  result.updates.RescheduleLater = result.later.length;
  const lost = byName(classified.lost, jobId);
  const nameIndex = new AllocNameIndex(
    jobId,
    name,
    group.Count,
    [...new Set([...untainted, ...migrate, ...rescheduleNow, ...lost])].map((alloc) => alloc.Name),
  );

  // Nomad's computeStop: the lost stop, then a count above the group's stops the highest names.
  const stopped = new Set<Allocation>(lost);
  for (const alloc of lost) result.stop.push({ alloc, description: stopDescriptions.lost, clientStatus: 'lost' });
  let remove = untainted.filter((alloc) => alloc.ClientStatus !== 'unknown').length + migrate.length - group.Count;
  const stopUnneeded = (alloc: Allocation) => {
    stopped.add(alloc);
    result.stop.push({ alloc, description: stopDescriptions.notNeeded });
    remove--;
  };
  if (remove > 0) {
    const working = byName(
      untainted.filter((alloc) => !serverTerminal(alloc)),
      jobId,
    );
    if (migrate.length > 0) {
      const names = new AllocNameIndex(
        jobId,
        name,
        group.Count,
        migrate.map((alloc) => alloc.Name),
      ).highest(remove);
      for (const alloc of byName(migrate, jobId)) {
        if (remove <= 0) break;
        if (!names.has(alloc.Name)) continue;
        migrate = migrate.filter((other) => other !== alloc);
        nameIndex.unsetIndex(allocIndex(alloc.Name, jobId, name));
        stopUnneeded(alloc);
      }
    }
    if (remove > 0) {
      const names = nameIndex.highest(remove);
      for (const alloc of working) {
        if (remove <= 0) break;
        if (names.has(alloc.Name)) stopUnneeded(alloc);
      }
      // Duplicate names can leave some to stop: the highest remaining.
      for (const alloc of [...working].reverse()) {
        if (remove <= 0) break;
        if (!stopped.has(alloc)) stopUnneeded(alloc);
      }
    }
  }
  result.updates.Stop += stopped.size;
  untainted = untainted.filter((alloc) => !stopped.has(alloc));

  // Nomad's computeUpdates.
  const destructive: Allocation[] = [];
  for (const alloc of byName(untainted, jobId)) {
    const kind = updateKind(alloc, context.jobOf(alloc), job, context.nodes.get(alloc.NodeID));
    if (kind === 'ignore') result.updates.Ignore++;
    else if (kind === 'destructive') destructive.push(alloc);
    else {
      result.updates.InPlaceUpdate++;
      result.inplace.push(inplaceUpdated(alloc, job, context.evalId));
    }
  }

  let underProvisionedBy =
    updateEmpty(group.Update) || destructive.length + migrate.length === 0 ? group.Count : maxParallel(group);

  // Nomad's computePlacements: reschedules, then the lost up to the count, then new names up to the count.
  const place: PlacementRequest[] = [];
  for (const alloc of rescheduleNow)
    place.push({
      group: name,
      name: alloc.Name,
      previousAlloc: alloc,
      replacing: 'reschedule',
      penaltyNodeIds: penaltyNodeIds(alloc),
      rescheduleTracker: nextRescheduleTracker(alloc, policyOf(alloc), context.now),
    });
  let existing = untainted.length + migrate.length + rescheduleNow.length;
  for (const alloc of lost) {
    if (existing >= group.Count) break;
    existing++;
    place.push({ group: name, name: alloc.Name, previousAlloc: alloc, replacing: 'lost' });
  }
  if (existing < group.Count)
    for (const next of nameIndex.next(group.Count - existing)) place.push({ group: name, name: next });

  // Nomad's placeAllocs (the deployment ready to place): the failed ones rescheduled now stop.
  result.updates.Place += place.length;
  const migrateSet = new Set(migrate);
  for (const alloc of rescheduleNow)
    if (!migrateSet.has(alloc) && alloc.ClientStatus !== 'unknown') {
      result.stop.push({ alloc, description: stopDescriptions.rescheduled });
      result.updates.Stop++;
    }
  underProvisionedBy -= Math.min(place.length, underProvisionedBy);

  // Nomad's computeDestructiveUpdates: at most what is left of max_parallel, by name.
  const updating = Math.min(destructive.length, underProvisionedBy);
  result.updates.DestructiveUpdate += updating;
  result.updates.Ignore += destructive.length - updating;
  const destructivePlace: PlacementRequest[] = [];
  for (const alloc of destructive.slice(0, updating)) {
    result.stop.push({ alloc, description: stopDescriptions.updating });
    destructivePlace.push({ group: name, name: alloc.Name, previousAlloc: alloc, replacing: 'update' });
  }

  // Nomad's computeMigrations.
  result.updates.Migrate += migrate.length;
  for (const alloc of byName(migrate, jobId)) {
    result.stop.push({ alloc, description: stopDescriptions.migrating });
    if (context.isBatch && alloc.DesiredTransition.Reschedule === true) continue;
    place.push({ group: name, name: alloc.Name, previousAlloc: alloc, replacing: 'migrate' });
  }

  // Never more placements than the count.
  if (place.length > group.Count) {
    place.length = group.Count;
    result.updates.Place = group.Count;
  }
  // The scheduler places destructive updates first; a placement reusing a name held twice takes a free one.
  result.place = [...destructivePlace, ...place].map((request) => {
    const index = allocIndex(request.name, jobId, name);
    if (!nameIndex.isDuplicate(index)) return request;
    const renamed = nameIndex.next(1)[0] as string;
    nameIndex.unsetIndex(index);
    return { ...request, name: renamed };
  });
  return result;
}

const isClientOrServerTerminal = (alloc: Allocation): boolean =>
  serverTerminal(alloc) ||
  alloc.ClientStatus === 'complete' ||
  alloc.ClientStatus === 'failed' ||
  alloc.ClientStatus === 'lost';
