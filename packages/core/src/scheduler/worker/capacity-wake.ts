/**
 * Which blocked evaluations room made wakes (Nomad's `nomad/blocked_evals.go`: `Unblock` by computed class, and the
 * `missedUnblock` check of an evaluation blocked after room appeared): room made on a node after the evaluation's
 * snapshot wakes it unless the evaluation recorded that node's computed class as ineligible for the job; an
 * evaluation whose constraints escaped the classes (`EscapedComputedClass`) is woken by room on any node. Only nodes
 * that take work now count. Where room is made is recorded by the writes that make it (`cluster/nodes/capacity.ts`).
 */
import type { Evaluation } from '../cluster/evaluations/model.ts';
import { CapacityLog, takesWork } from '../cluster/nodes/capacity.ts';
import { computedClass } from '../cluster/nodes/model.ts';
import type { WorkerParts } from './outcome.ts';

/** Room made on a node that takes work, at a write's index, with the node's computed class. */
export interface Room {
  nodeId: string;
  index: number;
  nodeClass: string;
}

/** The room made after `index` on nodes that take work now, with their computed classes. */
export async function roomSince(parts: Pick<WorkerParts, 'state' | 'nodes'>, index: number): Promise<Room[]> {
  const made = await new CapacityLog(parts.state).since(index);
  const classes = new Map<string, string | undefined>();
  for (const { nodeId } of made) {
    if (classes.has(nodeId)) continue;
    const node = await parts.nodes.get(nodeId);
    classes.set(nodeId, node && takesWork(node) ? node.ComputedClass || computedClass(node) : undefined);
  }
  return made.flatMap(({ nodeId, index }) => {
    const nodeClass = classes.get(nodeId);
    return nodeClass === undefined ? [] : [{ nodeId, index, nodeClass }];
  });
}

/** Whether `room` wakes the blocked `evaluation`. */
export function wakes(
  evaluation: Pick<Evaluation, 'SnapshotIndex' | 'ClassEligibility' | 'EscapedComputedClass'>,
  room: readonly Room[],
): boolean {
  return room.some(
    ({ index, nodeClass }) =>
      index > evaluation.SnapshotIndex &&
      (evaluation.EscapedComputedClass || evaluation.ClassEligibility?.[nodeClass] !== false),
  );
}
