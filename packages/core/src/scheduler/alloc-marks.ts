/**
 * The mark a node's beat carries of its allocations: `allocItemsIndex`, the index of the last write that changed any
 * allocation item in the node's partition (`keys.ts` `allocNodePk`): a placement, a plan's stop or update, a client's
 * report, an allocation stop, a deployment's health or promotion, a garbage collection's delete, anything. The
 * scheduler's snapshot (`worker/decide.ts`) reads a node's allocations again only when the mark moved since the
 * allocations it holds verified (`storage/verified-cache.ts`); so a write that changed a partition without moving the
 * mark would leave a snapshot with allocations that are no longer there.
 *
 * Nobody can forget it: `SchedulerState.commit` passes every transaction's writes through `allocationMarks` before it
 * sends them, which adds, for each node whose partition the writes touch, the beat's mark set to the write's index
 * (an update conditional on the beat as read, its MAC recomputed; a node without a beat, purged, has none to mark); a beat the writes already change must set the mark itself (plan apply's version write does), and
 * one that does not is refused as a bug. Writes are serialised by the index (`state.ts`), so the beat read here is the
 * one the transaction commits over.
 *
 * `allocIndex` (the node's allocation version, what plan apply is conditional on, what the agent polls) keeps its
 * meaning: it moves with placements and plans, not with a client's report. The mark moves with both.
 */
import { itemKey, type Key, type Store, type Write } from '../storage/store.ts';
import { itemKind } from '../storage/item-mac.ts';
import { shardKey } from '../storage/due.ts';
import { ALLOC_NODE_PREFIX, NODE_BEAT_PK } from './keys.ts';

/** A node's beat (`cluster/nodes/store.ts`): its secret's keyed hash and status; the deadline outside the MAC. */
export const beatKind = itemKind('scheduler-node-beat', ['deadline']);

/** The beat attribute that holds the mark. */
export const allocItemsIndexAttribute = 'allocItemsIndex';

/** Where a node's beat is. */
export const beatKey = (id: string): Key => ({ pk: shardKey(NODE_BEAT_PK, id), sk: id });

/** The key a write writes. */
function keyOf(write: Write): Key {
  if ('put' in write) return { pk: write.put.pk, sk: write.put.sk };
  if ('update' in write) return write.update;
  if ('delete' in write) return write.delete;
  return write.check;
}

/** Whether the write of a beat sets the mark to `index`. */
function setsMark(write: Write, index: number): boolean {
  if ('put' in write) return write.put[allocItemsIndexAttribute] === index;
  if ('update' in write) return write.change.set?.[allocItemsIndexAttribute] === index;
  return false;
}

/** The nodes whose allocation partition the writes change (puts, updates and deletes; a check changes nothing). */
export function allocationNodes(writes: Write[]): Set<string> {
  const nodes = new Set<string>();
  for (const write of writes) {
    if ('check' in write) continue;
    const { pk } = keyOf(write);
    if (pk.startsWith(ALLOC_NODE_PREFIX)) nodes.add(pk.slice(ALLOC_NODE_PREFIX.length));
  }
  return nodes;
}

/** The writes that mark, at `index`, the beats of the nodes whose allocations `writes` change (see above). */
export async function allocationMarks(store: Store, writes: Write[], index: number): Promise<Write[]> {
  const nodes = allocationNodes(writes);
  if (nodes.size === 0) return [];
  const written = new Map<string, Write>();
  for (const write of writes) {
    const key = keyOf(write);
    if (key.pk.startsWith(NODE_BEAT_PK)) written.set(itemKey(key.pk, key.sk), write);
  }
  const unmarked: Key[] = [];
  for (const node of nodes) {
    const key = beatKey(node);
    const own = written.get(itemKey(key.pk, key.sk));
    if (!own) unmarked.push(key);
    else if (!setsMark(own, index))
      throw new Error(`a write changes node ${node}'s allocations and its beat without moving the allocation mark`);
  }
  const marks: Write[] = [];
  for (let start = 0; start < unmarked.length; start += 100) {
    const chunk = unmarked.slice(start, start + 100);
    const found = await store.batchGet(chunk);
    for (const key of chunk) {
      const stored = found.get(itemKey(key.pk, key.sk));
      const beat = stored && store.verified(beatKind, stored);
      // No beat (a purged node) or one that does not verify (which every reader refuses): nothing to mark. A beat
      // created later is a registration, which starts the mark at its own index (`cluster/nodes/store.ts`).
      if (!beat) continue;
      marks.push({
        update: key,
        change: {
          set: {
            [allocItemsIndexAttribute]: index,
            mac: store.macOf(beatKind, { ...beat, [allocItemsIndexAttribute]: index }),
          },
        },
        when: { equals: { mac: beat.mac } },
      });
    }
  }
  return marks;
}
