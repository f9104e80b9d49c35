/**
 * Which system and sysbatch jobs a node may run (Nomad's system scheduler's candidates: the job's node pool, `all`
 * for any, and one of its datacenter globs), so a node that becomes ready has them evaluated for it.
 */
import { globMatches } from '../../../lib/glob.ts';
import type { ClusterNode } from '../nodes/model.ts';
import type { Namespaces } from '../namespaces/store.ts';
import type { Job } from './model.ts';
import type { Jobs } from './store.ts';

/** Nomad's datacenter globs (`*` any run of characters, as its `glob.Glob`). */
export function inDatacenters(node: Pick<ClusterNode, 'Datacenter'>, patterns: string[]): boolean {
  return patterns.some((pattern) => globMatches(pattern, node.Datacenter));
}

/** The running system and sysbatch jobs of every namespace whose pool and datacenters take `node`. */
export async function systemJobsFor(node: ClusterNode, namespaces: Namespaces, jobs: Jobs): Promise<Job[]> {
  const found: Job[] = [];
  for (const namespace of await namespaces.list())
    for (const job of await jobs.list(namespace.Name))
      if (
        (job.Type === 'system' || job.Type === 'sysbatch') &&
        !job.Stop &&
        (job.NodePool === 'all' || job.NodePool === node.NodePool) &&
        inDatacenters(node, job.Datacenters)
      )
        found.push(job);
  return found;
}
