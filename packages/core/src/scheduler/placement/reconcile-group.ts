/**
 * One task group of a service or batch job reconciled (Nomad's `computeGroup`, `scheduler/reconciler/
 * reconcile_cluster.go`): what is lost stops and is replaced, failed allocations reschedule now or later, a count
 * beyond the group's stops its highest names, changed allocations update in place or destructively (at most the
 * update block's `max_parallel` at a time, less what the current deployment has not yet seen healthy), canaries go
 * first when the update block asks for them, migrating allocations stop and are placed anew, and the missing ones
 * are placed under the lowest free names. The annotation counts are Nomad's, field by field.
 */
import type { Allocation } from '../cluster/allocations/model.ts';
import { isActive } from '../cluster/deployments/model.ts';
import { AllocNameIndex, allocIndex } from './alloc-names.ts';
import { canaryPlacements, requiresCanaries, splitCanaries } from './canaries.ts';
import { attachGroup, groupComplete, groupState, underProvisionedBy } from './deployment.ts';
import { stopDescriptions } from './descriptions.ts';
import { byName, emptyUpdates, type GroupResult, type JobContext, serverTerminal, stopAll } from './group-common.ts';
import { computeStop } from './group-stop.ts';
import {
  nextRescheduleTracker,
  penaltyNodeIds,
  type ReschedulePolicy,
  reschedulePolicy,
  splitByRescheduleable,
} from './reschedule.ts';
import { classify } from './tainted.ts';
import type { PlacementRequest } from './types.ts';
import { inplaceUpdated, updateKind } from './updates.ts';

const clientTerminal = (alloc: Allocation): boolean =>
  alloc.ClientStatus === 'complete' || alloc.ClientStatus === 'failed' || alloc.ClientStatus === 'lost';

export function reconcileGroup(name: string, groupAllocs: Allocation[], context: JobContext): GroupResult {
  const { job, jobId, deployments } = context;
  const result: GroupResult = { place: [], stop: [], inplace: [], updates: emptyUpdates(), later: [], complete: true };
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
  const { state, existing } = groupState(deployments, group);
  if (context.isBatch) {
    // Terminal allocations of an older version are not counted (Nomad's filterOldTerminalAllocs).
    const old = all.filter(
      (alloc) => alloc.JobVersion < job.Version && (serverTerminal(alloc) || clientTerminal(alloc)),
    );
    result.updates.Ignore += old.length;
    const oldSet = new Set(old);
    all = all.filter((alloc) => !oldSet.has(alloc));
  }
  const classifyOptions = { jobId, group, isBatch: context.isBatch, nodes: context.nodes, now: context.now };
  const canarySplit = splitCanaries(all, deployments, classifyOptions);
  all = canarySplit.all;
  const canaries = canarySplit.canaries;
  result.stop.push(...canarySplit.stop);
  result.updates.Stop += canarySplit.counted;

  const classified = classify(all, { ...classifyOptions, groupAllocs });
  result.updates.Ignore += classified.ignore.length;
  const policyOf = (alloc: Allocation): ReschedulePolicy | undefined =>
    reschedulePolicy(context.jobOf(alloc) ?? job, name);
  const current = deployments.current;
  const activeId = current && isActive(current) ? current.ID : undefined;
  const reschedule = (allocs: Allocation[]) =>
    splitByRescheduleable(allocs, context.isBatch, context.now, context.evalId, policyOf, activeId);
  const split = reschedule(classified.untainted);
  const migrating = reschedule(classified.migrate);
  const rescheduleNow = byName(new Set([...split.now, ...migrating.now]), jobId);
  result.later = [...split.later, ...migrating.later];
  result.updates.RescheduleLater = result.later.length;
  const lost = byName(classified.lost, jobId);
  const nameIndex = new AllocNameIndex(
    jobId,
    name,
    group.Count,
    [...new Set([...split.untainted, ...classified.migrate, ...rescheduleNow, ...lost])].map((alloc) => alloc.Name),
  );

  let isCanarying = state.DesiredCanaries !== 0 && !state.Promoted;
  const stops = computeStop({
    jobId,
    group,
    nameIndex,
    untainted: split.untainted,
    migrate: classified.migrate,
    lost,
    canaries,
    isCanarying,
  });
  result.stop.push(...stops.stop);
  result.updates.Stop += stops.stopped.size;
  let untainted = stops.untainted;
  const migrate = stops.migrate;

  // Nomad's computeUpdates.
  const destructive: Allocation[] = [];
  let inplace = 0;
  for (const alloc of byName(untainted, jobId)) {
    const kind = updateKind(alloc, context.jobOf(alloc), job, context.nodes.get(alloc.NodeID), context.fitsInPlace);
    if (kind === 'ignore') result.updates.Ignore++;
    else if (kind === 'destructive') destructive.push(alloc);
    else {
      inplace++;
      result.updates.InPlaceUpdate++;
      result.inplace.push(inplaceUpdated(alloc, job, context.evalId));
    }
  }
  if (!existing) state.DesiredTotal += destructive.length + inplace;

  if (isCanarying) {
    const canarySet = new Set(canaries);
    untainted = untainted.filter((alloc) => !canarySet.has(alloc));
  }
  const needsCanaries = requiresCanaries(group, state, destructive, canaries);
  const canaryPlace = needsCanaries
    ? canaryPlacements(group, state, deployments, destructive, canaries, nameIndex)
    : [];
  result.updates.Canary += canaryPlace.length;
  isCanarying = state.DesiredCanaries !== 0 && !state.Promoted;
  let budget = underProvisionedBy(group, deployments, untainted, destructive.length + migrate.length, isCanarying);

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
      ...(alloc.DeploymentStatus?.Canary ? { canary: true } : {}),
    });
  let count = untainted.length + migrate.length + rescheduleNow.length;
  for (const alloc of lost) {
    if (count >= group.Count) break;
    count++;
    place.push({
      group: name,
      name: alloc.Name,
      previousAlloc: alloc,
      replacing: 'lost',
      ...(alloc.DeploymentStatus?.Canary ? { canary: true } : {}),
    });
  }
  if (count < group.Count)
    for (const next of nameIndex.next(group.Count - count)) place.push({ group: name, name: next });
  if (!existing) state.DesiredTotal += place.length;

  // Nomad's placeAllocs.
  const placeReady = !deployments.paused && !deployments.failed && !isCanarying;
  const placed = placeReady ? place : placedWhileHeld(place, lost.length, deployments);
  result.updates.Place += placed.length;
  const migrateSet = new Set(migrate);
  for (const request of placed) {
    const previous = request.previousAlloc;
    if (request.replacing !== 'reschedule' || !previous) continue;
    if (migrateSet.has(previous) || previous.ClientStatus === 'unknown') continue;
    result.stop.push({ alloc: previous, description: stopDescriptions.rescheduled });
    result.updates.Stop++;
  }
  if (placeReady) budget -= Math.min(place.length, budget);

  // Nomad's computeDestructiveUpdates: at most what is left of the budget, by name.
  const destructivePlace: PlacementRequest[] = [];
  if (placeReady) {
    const updating = Math.min(destructive.length, budget);
    result.updates.DestructiveUpdate += updating;
    result.updates.Ignore += destructive.length - updating;
    for (const alloc of destructive.slice(0, updating)) {
      result.stop.push({ alloc, description: stopDescriptions.updating });
      destructivePlace.push({ group: name, name: alloc.Name, previousAlloc: alloc, replacing: 'update' });
    }
  } else result.updates.Ignore += destructive.length;

  // Nomad's computeMigrations.
  result.updates.Migrate += migrate.length;
  const migrations: PlacementRequest[] = [];
  for (const alloc of byName(migrate, jobId)) {
    result.stop.push({ alloc, description: stopDescriptions.migrating });
    if (context.isBatch && alloc.DesiredTransition.Reschedule === true) continue;
    migrations.push({
      group: name,
      name: alloc.Name,
      previousAlloc: alloc,
      replacing: 'migrate',
      ...(alloc.DeploymentStatus?.Canary ? { canary: true } : {}),
    });
  }
  attachGroup(deployments, job, group, state, existing, all, destructive.length > 0 || inplace > 0, context.now);

  // Never more placements than the count (canaries first, as Nomad appends them first).
  const requests = [...canaryPlace, ...placed, ...migrations];
  if (requests.length > group.Count) {
    requests.length = group.Count;
    result.updates.Place = group.Count;
  }
  const pending =
    destructive.length + inplace + requests.length + migrate.length + rescheduleNow.length + result.later.length;
  result.complete = groupComplete(deployments, name, pending, needsCanaries);
  // The scheduler places destructive updates first; a placement reusing a name held twice takes a free one.
  result.place = [...destructivePlace, ...requests].map((request) => {
    const index = allocIndex(request.name, jobId, name);
    if (!nameIndex.isDuplicate(index)) return request;
    const renamed = nameIndex.next(1)[0] as string;
    nameIndex.unsetIndex(index);
    return { ...request, name: renamed };
  });
  return result;
}

/**
 * What is placed while the deployment holds (paused, failed or canarying): replacements of lost allocations, and
 * reschedules that are not of the failed deployment (Nomad's placeAllocs; a placement is taken once).
 */
function placedWhileHeld(
  place: PlacementRequest[],
  lostCount: number,
  deployments: JobContext['deployments'],
): PlacementRequest[] {
  const taken = lostCount > 0 ? place.slice(0, Math.min(lostCount, place.length)) : [];
  const hasReschedule = place.some((request) => request.replacing === 'reschedule');
  if (!hasReschedule) return taken;
  const already = new Set(taken);
  for (const request of place) {
    if (request.replacing !== 'reschedule' || already.has(request)) continue;
    const previous = request.previousAlloc;
    const ofFailedDeployment =
      deployments.failed && previous !== undefined && deployments.current?.ID === previous.DeploymentID;
    if (!ofFailedDeployment) taken.push(request);
  }
  return taken;
}
