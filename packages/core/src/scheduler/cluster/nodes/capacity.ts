/**
 * Where capacity appeared, for blocked evaluations (Nomad's `nomad/blocked_evals.go`, whose `Unblock` the state store
 * calls with a node's computed class): every write that makes room on a node records it in the same transaction, one
 * small item (`CAPACITY_PK`) per node and write, kept a day. A blocked evaluation is woken only by room made after its
 * snapshot on a node whose computed class it did not find ineligible, or on any node if a constraint escaped the
 * classes (`worker/capacity-wake.ts`). What makes room: a node that becomes schedulable (ready, eligible, not
 * draining: registered, back from down, marked eligible, its drain ended) or changes its resources while it is, and an
 * allocation whose client reports it terminal (complete, failed or lost), whether or not it was stopped first. As in
 * Nomad (whose FSM unblocks on the client's `complete`/`failed` update, not on the plan), a plan's stop or eviction
 * makes no room yet: the work still runs on the node until its client says it ended. An allocation that starts running
 * makes none.
 */
import { shardCount, shardKey, ttlBackstop } from '../../../storage/due.ts';
import type { Write } from '../../../storage/store.ts';
import { CAPACITY_PK } from '../../keys.ts';
import type { SchedulerState } from '../../state.ts';
import { isClientTerminal } from '../allocations/model.ts';
import type { Allocation } from '../allocations/model.ts';
import type { ClusterNode } from './model.ts';

/** How long a record of room made is kept: far longer than any blocked evaluation waits for the minute job. */
const keptSeconds = 24 * 3600;

const indexKey = (index: number) => String(index).padStart(16, '0');

/** Nomad's `Node.Ready` without the pool: placement may put new work there. */
export const takesWork = (node: Pick<ClusterNode, 'Status' | 'SchedulingEligibility' | 'DrainStrategy'>): boolean =>
  node.Status === 'ready' && node.SchedulingEligibility === 'eligible' && !node.DrainStrategy;

/** Whether writing `after` over `before` makes room on the node: it now takes work and did not, or changed its size. */
export function nodeMadeRoom(before: ClusterNode | undefined, after: ClusterNode): boolean {
  if (!takesWork(after)) return false;
  if (!before || !takesWork(before)) return true;
  return (
    before.ComputedClass !== after.ComputedClass ||
    JSON.stringify(before.NodeResources) !== JSON.stringify(after.NodeResources)
  );
}

/** Whether a client's report of an allocation frees what it held: its client ran it and now says it ended. */
export const allocationFreed = (before: Allocation, after: Allocation): boolean =>
  !isClientTerminal(before) && isClientTerminal(after);

export interface RoomMade {
  nodeId: string;
  index: number;
}

export class CapacityLog {
  constructor(private readonly state: SchedulerState) {}

  /** The write recording that the write at `index` made room on `nodeId`, for that write's transaction. */
  roomMade(nodeId: string, index: number): Write {
    const now = Math.floor(this.state.clock.now() / 1000);
    return {
      put: {
        pk: shardKey(CAPACITY_PK, nodeId),
        sk: `${indexKey(index)}#${nodeId}`,
        nodeId,
        index,
        expiresAt: ttlBackstop(now + keptSeconds),
      },
    };
  }

  /** The room made by writes after `index`, every shard, oldest first. */
  async since(index: number): Promise<RoomMade[]> {
    const shards = await Promise.all(
      Array.from({ length: shardCount }, (_, shard) =>
        this.state.store.list(`${CAPACITY_PK}#${String(shard).padStart(2, '0')}`, {
          range: { after: `${indexKey(index)}#~` },
        }),
      ),
    );
    return shards
      .flat()
      .map((item) => ({ nodeId: String(item.nodeId), index: Number(item.index) }))
      .sort((a, b) => a.index - b.index);
  }
}
