/**
 * The nodes a job may be placed on, as Nomad's `readyNodesInDCsAndPool` (`scheduler/util.go`) finds them: ready,
 * eligible and not draining (`Node.Ready`), in the job's node pool (`all`, or none, is every pool), in a datacenter
 * one of the job's `Datacenters` globs matches; with the count of such nodes by datacenter (`NodesAvailable`).
 */
import { globMatches } from '../../lib/glob.ts';
import type { Job } from '../cluster/jobs/model.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';

/** Nomad's `NodePoolAll`. */
export const allPools = 'all';

/** Nomad's `Node.Ready`: status ready, not draining, eligible. */
export const nodeReady = (node: ClusterNode): boolean =>
  node.Status === 'ready' && node.DrainStrategy === null && node.SchedulingEligibility === 'eligible';

/** Nomad's `Node.IsInAnyDC`. */
export const inAnyDatacenter = (node: ClusterNode, datacenters: readonly string[]): boolean =>
  datacenters.some((pattern) => globMatches(pattern, node.Datacenter));

export const inJobPool = (node: ClusterNode, pool: string): boolean =>
  pool === allPools || pool === '' || node.NodePool === pool;

export interface Candidates {
  nodes: ClusterNode[];
  byDatacenter: Record<string, number>;
}

/** The ready nodes of the job's pool and datacenters, in the snapshot's order, and their count by datacenter. */
export function readyNodes(nodes: readonly ClusterNode[], job: Pick<Job, 'Datacenters' | 'NodePool'>): Candidates {
  const found: ClusterNode[] = [];
  const byDatacenter: Record<string, number> = {};
  const datacenters = job.Datacenters.length > 0 ? job.Datacenters : ['*'];
  const matched = new Map<string, boolean>();
  const inDatacenters = (node: ClusterNode) => {
    let matches = matched.get(node.Datacenter);
    if (matches === undefined) {
      matches = inAnyDatacenter(node, datacenters);
      matched.set(node.Datacenter, matches);
    }
    return matches;
  };
  for (const node of nodes) {
    if (!inJobPool(node, job.NodePool) || !nodeReady(node) || !inDatacenters(node)) continue;
    found.push(node);
    byDatacenter[node.Datacenter] = (byDatacenter[node.Datacenter] ?? 0) + 1;
  }
  return { nodes: found, byDatacenter };
}
