import { seededNode } from '../../packages/agent/src/fleet/seeded-nodes.ts';
import type { Core } from '../../packages/core/src/composition/secrets-core.ts';
import { registeredNode } from '../../packages/core/src/scheduler/cluster/nodes/model.ts';
import type { Scheduler } from '../../packages/core/src/scheduler/composition/scheduler-core.ts';
import { META_PK, NODE_COUNT_SK } from '../../packages/core/src/scheduler/keys.ts';
import type { Write } from '../../packages/core/src/storage/store.ts';

/**
 * `count` ready nodes of the agent's seeded fleet (`seededNode(position, { seed })`) stored directly, as registration
 * stores them (`ClusterNodes.nodeWrite` and a `beatItem` good for an hour), 50 nodes a transaction, and the node
 * count: what a bench seeds instead of registering each node over HTTP. Each node's ID and SecretID.
 */
export async function seedReadyNodes(
  core: Core,
  scheduler: Scheduler,
  count: number,
  seed: number,
): Promise<Map<string, string>> {
  const now = core.clock.now();
  const secrets = new Map<string, string>();
  const writes: Write[] = [];
  for (let position = 0; position < count; position++) {
    const input = seededNode(position, { seed });
    const node = { ...registeredNode(input as never, undefined, 1, now), Status: 'ready' as const };
    secrets.set(node.ID, input.SecretID as string);
    const secretHash = scheduler.nodes.secretHash(node.ID, input.SecretID as string);
    writes.push(scheduler.nodes.nodeWrite(node, undefined), {
      put: scheduler.nodes.beatItem(node, secretHash, 1, now + 3_600_000, undefined, undefined),
      when: { absent: true },
    });
  }
  for (let start = 0; start < writes.length; start += 100) await core.store.transact(writes.slice(start, start + 100));
  await core.store.put({ pk: META_PK, sk: NODE_COUNT_SK, value: count });
  return secrets;
}
