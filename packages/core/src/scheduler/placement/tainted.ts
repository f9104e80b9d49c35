/**
 * Which of a task group's allocations stay, migrate, are lost or are ignored, by their state and their node's
 * (Nomad's `classifyAllocs`, `scheduler/reconciler/filters.go`, over the nodes `taintedNodes` names: collected, down,
 * disconnected or draining). A draining node's allocations migrate as Nomad's drainer marks them
 * (`nomad/drainer/watch_jobs.go`): at most as many as keep `Count - Migrate.MaxParallel` healthy, service groups only,
 * batch allocations and the rest all at once when the drain's deadline has passed. Also: allocations told to stop
 * whose node went down before reporting it are marked lost (`lostAfterStop`).
 *
 * Not here yet: a group's `disconnect` block (allocations on a disconnected node are lost at once, as Nomad does for
 * a group without one) and reconnecting allocations.
 */
import type { Allocation } from '../cluster/allocations/model.ts';
import type { TaskGroup } from '../cluster/jobs/model.ts';
import { type ClusterNode, zeroTime } from '../cluster/nodes/model.ts';
import { allocIndex } from './alloc-names.ts';
import { stopDescriptions } from './descriptions.ts';
import type { StopDecision } from './types.ts';

export interface Classified {
  untainted: Allocation[];
  migrate: Allocation[];
  lost: Allocation[];
  ignore: Allocation[];
}

const clientTerminal = (alloc: Allocation): boolean =>
  alloc.ClientStatus === 'complete' || alloc.ClientStatus === 'failed' || alloc.ClientStatus === 'lost';
const serverTerminal = (alloc: Allocation): boolean =>
  alloc.DesiredStatus === 'stop' || alloc.DesiredStatus === 'evict';

/** Whether a node's drain has reached its deadline (a forced drain at once), as of `now` (ms). */
export function drainDeadlinePassed(node: ClusterNode, now: number): boolean {
  const drain = node.DrainStrategy;
  if (!drain) return false;
  if (drain.Deadline < 0) return true;
  if (drain.Deadline === 0) return false;
  // The store writes ForceDeadline (StartedAt + Deadline); Go's zero time there means it was not set.
  let deadline = drain.ForceDeadline === zeroTime ? Number.NaN : Date.parse(drain.ForceDeadline);
  if (!Number.isFinite(deadline)) deadline = Date.parse(drain.StartedAt) + drain.Deadline / 1e6;
  return Number.isFinite(deadline) && deadline <= now;
}

/** The group's `Migrate.MaxParallel` (Nomad's default 1). */
export function migrateMaxParallel(group: TaskGroup | undefined): number {
  const migrate = group?.Migrate as { MaxParallel?: unknown } | null | undefined;
  return typeof migrate?.MaxParallel === 'number' ? migrate.MaxParallel : 1;
}

/**
 * Whether an allocation counts as healthy for a drain (Nomad's DeploymentStatus.HasHealth); one running with no
 * deployment health reported counts too, as nothing reports deployment health here yet.
 */
const hasHealth = (alloc: Allocation): boolean =>
  alloc.DeploymentStatus?.Healthy !== null && alloc.DeploymentStatus?.Healthy !== undefined
    ? true
    : alloc.ClientStatus === 'running';

export interface ClassifyOptions {
  jobId: string;
  group: TaskGroup | undefined;
  isBatch: boolean;
  nodes: Map<string, ClusterNode>;
  now: number;
  /** Every allocation of the group, terminal ones included: the drain counts the healthy ones. */
  groupAllocs: Allocation[];
}

export function classify(allocs: Allocation[], options: ClassifyOptions): Classified {
  const out: Classified = { untainted: [], migrate: [], lost: [], ignore: [] };
  const draining: Allocation[] = [];
  for (const alloc of allocs) {
    const node = options.nodes.get(alloc.NodeID);
    if (serverTerminal(alloc)) out.ignore.push(alloc);
    else if (clientTerminal(alloc)) out.untainted.push(alloc);
    else if (!node || node.Status === 'disconnected') out.lost.push(alloc);
    else if (alloc.DesiredTransition.Migrate === true) out.migrate.push(alloc);
    else if (node.Status === 'down') out.lost.push(alloc);
    else if (node.DrainStrategy) {
      if (drainDeadlinePassed(node, options.now)) out.migrate.push(alloc);
      else if (options.isBatch) out.untainted.push(alloc);
      else draining.push(alloc);
    } else out.untainted.push(alloc);
  }
  if (draining.length === 0) return out;
  const healthy = options.groupAllocs.filter(
    (alloc) =>
      !serverTerminal(alloc) && !clientTerminal(alloc) && hasHealth(alloc) && alloc.DesiredTransition.Migrate !== true,
  ).length;
  const count = options.group?.Count ?? 0;
  const allowed = Math.min(draining.length, healthy - (count - migrateMaxParallel(options.group)));
  const ordered = [...draining].sort(
    (a, b) =>
      allocIndex(a.Name, options.jobId, a.TaskGroup) - allocIndex(b.Name, options.jobId, b.TaskGroup) ||
      a.ID.localeCompare(b.ID),
  );
  out.migrate.push(...ordered.slice(0, Math.max(0, allowed)));
  out.untainted.push(...ordered.slice(Math.max(0, allowed)));
  return out;
}

/**
 * Allocations already told to stop whose node is down or gone but whose client never said so: marked lost (Nomad's
 * updateNonTerminalAllocsToLost); not counted in the annotations.
 */
export function lostAfterStop(allocs: Allocation[], nodes: Map<string, ClusterNode>): StopDecision[] {
  return allocs
    .filter((alloc) => {
      const node = nodes.get(alloc.NodeID);
      return (
        (!node || node.Status === 'down') &&
        alloc.DesiredStatus !== 'run' &&
        (alloc.ClientStatus === 'running' || alloc.ClientStatus === 'pending')
      );
    })
    .map((alloc) => ({ alloc, description: stopDescriptions.lost, clientStatus: 'lost' as const }));
}
