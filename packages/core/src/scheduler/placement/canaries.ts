/**
 * Canaries (Nomad's cancelUnneededCanaries, requiresCanaries and computeCanaries, `reconcile_cluster.go`): a group
 * whose update block asks for canaries places that many of the new version beside the old allocations, and replaces
 * nothing else until the deployment promotes them. Canaries of a deployment that is cancelled, finished or failed
 * before promotion stop.
 */
import type { Allocation } from '../cluster/allocations/model.ts';
import type { DeploymentState } from '../cluster/deployments/model.ts';
import type { TaskGroup } from '../cluster/jobs/model.ts';
import type { AllocNameIndex } from './alloc-names.ts';
import { stopDescriptions } from './descriptions.ts';
import type { DeploymentContext } from './deployment.ts';
import { updateBlock } from './deployment.ts';
import { type ClassifyOptions, classify } from './tainted.ts';
import type { PlacementRequest, StopDecision } from './types.ts';

const unpromotedCanaries = (groups: Record<string, DeploymentState>): string[] =>
  Object.values(groups).flatMap((state) => (state.Promoted ? [] : (state.PlacedCanaries ?? [])));

export interface CanarySplit {
  /** The group's allocations without the canaries stopped here. */
  all: Allocation[];
  /** The current deployment's canaries that stay. */
  canaries: Allocation[];
  stop: StopDecision[];
  /** The stops counted in the annotation (those of an old or failed deployment's canaries). */
  counted: number;
}

export function splitCanaries(
  all: Allocation[],
  deployments: DeploymentContext,
  options: Omit<ClassifyOptions, 'groupAllocs'>,
): CanarySplit {
  const ids = new Set<string>();
  if (deployments.old) for (const id of unpromotedCanaries(deployments.old.TaskGroups)) ids.add(id);
  if (deployments.current?.Status === 'failed')
    for (const id of unpromotedCanaries(deployments.current.TaskGroups)) ids.add(id);
  // A canary already told to stop (a batch job keeps those in view) is not stopped again.
  const cancelled = all.filter((alloc) => ids.has(alloc.ID) && alloc.DesiredStatus === 'run');
  const cancelledSet = new Set(cancelled);
  const split: CanarySplit = {
    all: all.filter((alloc) => !cancelledSet.has(alloc)),
    canaries: [],
    stop: cancelled.map((alloc) => ({ alloc, description: stopDescriptions.notNeeded })),
    counted: cancelled.length,
  };
  const current = deployments.current;
  if (!current) return split;
  const placed = new Set(Object.values(current.TaskGroups).flatMap((state) => state.PlacedCanaries ?? []));
  const canaries = split.all.filter((alloc) => placed.has(alloc.ID));
  const classified = classify(canaries, { ...options, groupAllocs: canaries });
  // Moving or lost canaries just stop; the deployment places others (not counted: it is still running).
  for (const alloc of classified.migrate) split.stop.push({ alloc, description: stopDescriptions.migrating });
  for (const alloc of classified.lost)
    split.stop.push({ alloc, description: stopDescriptions.lost, clientStatus: 'lost' });
  const gone = new Set([...classified.migrate, ...classified.lost]);
  split.all = split.all.filter((alloc) => !gone.has(alloc));
  split.canaries = classified.untainted;
  return split;
}

/** Whether the group needs (more) canaries before its destructive updates (Nomad's requiresCanaries). */
export function requiresCanaries(
  group: TaskGroup,
  state: DeploymentState,
  destructive: Allocation[],
  canaries: Allocation[],
): boolean {
  const update = updateBlock(group);
  return update !== undefined && destructive.length > 0 && canaries.length < update.Canary && !state.Promoted;
}

/** The canaries to place (Nomad's computeCanaries): none while the deployment is paused or failed. */
export function canaryPlacements(
  group: TaskGroup,
  state: DeploymentState,
  deployments: DeploymentContext,
  destructive: Allocation[],
  canaries: Allocation[],
  nameIndex: AllocNameIndex,
): PlacementRequest[] {
  const wanted = updateBlock(group)?.Canary ?? 0;
  state.DesiredCanaries = wanted;
  if (deployments.paused || deployments.failed) return [];
  const names = nameIndex.nextCanaries(
    wanted - canaries.length,
    new Set(canaries.map((alloc) => alloc.Name)),
    destructive.map((alloc) => alloc.Name),
  );
  return names.map((name) => ({ group: group.Name, name, canary: true }));
}
