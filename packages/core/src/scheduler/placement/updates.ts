/**
 * How an allocation meets a new version of its job (Nomad's `genericAllocUpdateFn`, `scheduler/util.go`): unchanged
 * (same version, or a terminal allocation), in place (no change needs a restart: the allocation takes the new version
 * where it is), or destructive (stopped and placed anew). An allocation whose job version is no longer stored, or
 * whose node is gone or now outside the job's datacenters or node pool, is updated destructively.
 *
 * Nomad also re-runs feasibility on the node for an in-place update (a new constraint the node fails, or resources it
 * no longer has, make it destructive): that needs every allocation on the node, so the caller answers it
 * (`ReconcileInput.fitsInPlace`, typically the placement function on that one node with the allocation freed).
 */
import { globMatches } from '../../lib/glob.ts';
import { type Allocation, isTerminal } from '../cluster/allocations/model.ts';
import type { Job } from '../cluster/jobs/model.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import { tasksUpdated } from './tasks-updated.ts';

export type UpdateKind = 'ignore' | 'inplace' | 'destructive';

export const inAnyDatacenter = (node: ClusterNode, datacenters: string[]): boolean =>
  datacenters.some((dc) => globMatches(dc, node.Datacenter));

export const inPool = (node: ClusterNode, pool: string): boolean => pool === 'all' || node.NodePool === pool;

/** tasksUpdated of one pair of job versions and group, computed once (a job's allocations share their versions). */
const compared = new WeakMap<Job, WeakMap<Job, Map<string, string | undefined>>>();
function changed(oldJob: Job, newJob: Job, group: string): string | undefined {
  let byNew = compared.get(oldJob);
  if (!byNew) {
    byNew = new WeakMap();
    compared.set(oldJob, byNew);
  }
  let byGroup = byNew.get(newJob);
  if (!byGroup) {
    byGroup = new Map();
    byNew.set(newJob, byGroup);
  }
  if (!byGroup.has(group)) byGroup.set(group, tasksUpdated(oldJob, newJob, group));
  return byGroup.get(group);
}

export type FitsInPlace = (alloc: Allocation, job: Job, node: ClusterNode) => boolean;

export function updateKind(
  alloc: Allocation,
  allocJob: Job | undefined,
  job: Job,
  node: ClusterNode | undefined,
  fitsInPlace?: FitsInPlace,
): UpdateKind {
  if (alloc.JobVersion === job.Version) return 'ignore';
  if (!allocJob || changed(allocJob, job, alloc.TaskGroup) !== undefined) return 'destructive';
  if (isTerminal(alloc)) return 'ignore';
  if (!node || !inAnyDatacenter(node, job.Datacenters) || !inPool(node, job.NodePool)) return 'destructive';
  if (fitsInPlace && !fitsInPlace(alloc, job, node)) return 'destructive';
  return 'inplace';
}

/** The allocation updated in place by evaluation `evalId` to the job's version. */
export const inplaceUpdated = (alloc: Allocation, job: Job, evalId: string): Allocation => ({
  ...alloc,
  EvalID: evalId,
  JobVersion: job.Version,
});
