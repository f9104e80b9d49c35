/**
 * The jobs a namespace or a node pool holds, read from the jobs' key space (`keys.ts`, `jobPk`: one partition per
 * namespace), which part 2 of the cluster writes. A job whose `Status` is not `dead` keeps its namespace and its
 * pool from being deleted, as in Nomad (`nomad/namespace_endpoint.go`, `nomad/node_pool_endpoint.go`). Until jobs
 * exist the partitions are empty and nothing is in use.
 */
import type { Item, Store } from '../../storage/store.ts';
import { jobPk } from '../keys.ts';

/** A stored job as far as these checks read it. */
export interface StoredJob extends Item {
  ID: string;
  Namespace: string;
  NodePool: string;
  Status: string;
}

/** The jobs of one namespace. */
export function jobsInNamespace(store: Store, namespace: string): Promise<StoredJob[]> {
  return store.list<StoredJob>(jobPk(namespace));
}

/** The first job of the namespace that is not dead, if any. */
export async function liveJobInNamespace(store: Store, namespace: string): Promise<StoredJob | undefined> {
  return (await jobsInNamespace(store, namespace)).find((job) => job.Status !== 'dead');
}

/** The jobs of `namespaces` placed in `pool` (`all`: any pool is the job's own, not a wildcard here). */
export async function jobsInPool(store: Store, namespaces: readonly string[], pool: string): Promise<StoredJob[]> {
  const found: StoredJob[] = [];
  for (const namespace of namespaces) {
    for (const job of await jobsInNamespace(store, namespace)) if (job.NodePool === pool) found.push(job);
  }
  return found;
}
