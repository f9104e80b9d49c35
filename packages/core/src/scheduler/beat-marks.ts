/**
 * The marks a node's beat carries of what the scheduler's snapshot holds of the node (`worker/decide.ts`):
 *
 * - `allocItemsIndex`, the index of the last write that changed any allocation item in the node's partition
 *   (`keys.ts` `allocNodePk`): a placement, a plan's stop or update, a client's report, an allocation stop, a
 *   deployment's health or promotion, a garbage collection's delete, anything;
 * - `nodeItemIndex`, the index of the last write of the node's item (registration, status, drain, eligibility, events).
 *
 * The snapshot reads a node's item or allocations again only when its mark moved since what it holds verified
 * (`storage/verified-cache.ts`, `storage/marked-items.ts`); so a write that changed them without moving the mark would
 * leave a snapshot with a node or allocations that are no longer so.
 *
 * Nobody can forget them: `SchedulerState.commit` passes every transaction's writes through `beatMarks` before it sends
 * them, which adds, for each node whose item or allocations the writes change, the beat's marks set to the write's
 * index (an update conditional on the beat as read, its MAC recomputed; a node without a beat, purged, has none to
 * mark; a write touching more nodes than its transaction has room for moves the overflow mark instead, after which
 * every process drops the marks it held). A beat the writes already write must carry the marks itself (registration's and a heartbeat's put, plan
 * apply's version write, a drain's) or be deleted with the node; one that does not is refused as a bug. Writes are
 * serialised by the index (`state.ts`), so the beat read here is the one the transaction commits over.
 *
 * `allocIndex` (the node's allocation version, what plan apply is conditional on, what the agent polls) keeps its
 * meaning: it moves with placements and plans, not with a client's report. The allocation mark moves with both.
 */
import { itemKey, type Key, type Store, type Write } from '../storage/store.ts';
import { itemKind } from '../storage/item-mac.ts';
import { shardKey } from '../storage/due.ts';
import { ALLOC_NODE_PREFIX, MARKS_OVERFLOW_SK, META_PK, NODE_BEAT_PK, NODE_PK } from './keys.ts';

/** A node's beat (`cluster/nodes/store.ts`): its secret's keyed hash and status; the deadline outside the MAC. */
export const beatKind = itemKind('scheduler-node-beat', ['deadline']);

/** The beat attribute that marks the node's allocations. */
export const allocItemsIndexAttribute = 'allocItemsIndex';
/** The beat attribute that marks the node's item. */
export const nodeItemIndexAttribute = 'nodeItemIndex';

/** Where a node's beat is. */
export const beatKey = (id: string): Key => ({ pk: shardKey(NODE_BEAT_PK, id), sk: id });

const nodeShardPrefix = `${NODE_PK}#`;

/** The key a write writes. */
function keyOf(write: Write): Key {
  if ('put' in write) return { pk: write.put.pk, sk: write.put.sk };
  if ('update' in write) return write.update;
  if ('delete' in write) return write.delete;
  return write.check;
}

/** Whether the write of a beat sets the mark to `index` (or deletes the beat: the node is gone with its marks). */
function setsMark(write: Write, attribute: string, index: number): boolean {
  if ('put' in write) return write.put[attribute] === index;
  if ('update' in write) return write.change.set?.[attribute] === index;
  return 'delete' in write;
}

/** Per node whose item or allocations the writes change (puts, updates, deletes; not checks), the marks it needs. */
export function markedNodes(writes: Write[]): Map<string, Set<string>> {
  const nodes = new Map<string, Set<string>>();
  const need = (node: string, attribute: string) => {
    const marks = nodes.get(node) ?? new Set<string>();
    marks.add(attribute);
    nodes.set(node, marks);
  };
  for (const write of writes) {
    if ('check' in write) continue;
    const { pk, sk } = keyOf(write);
    if (pk.startsWith(ALLOC_NODE_PREFIX)) need(pk.slice(ALLOC_NODE_PREFIX.length), allocItemsIndexAttribute);
    else if (pk.startsWith(nodeShardPrefix)) need(sk, nodeItemIndexAttribute);
  }
  return nodes;
}

/**
 * The writes that mark, at `index`, the beats of the nodes whose item or allocations `writes` change (see above). When
 * they are more than `room` (a write touching many nodes besides many items), one write instead: the overflow mark
 * (`MARKS_OVERFLOW_SK`) at `index`, after which every snapshot process drops the marks it held (`marksOverflow`).
 */
export async function beatMarks(store: Store, writes: Write[], index: number, room = Infinity): Promise<Write[]> {
  const nodes = markedNodes(writes);
  if (nodes.size === 0) return [];
  const written = new Map<string, Write>();
  for (const write of writes) {
    const key = keyOf(write);
    if (key.pk.startsWith(NODE_BEAT_PK)) written.set(itemKey(key.pk, key.sk), write);
  }
  const unmarked: Array<{ key: Key; marks: Set<string> }> = [];
  for (const [node, marks] of nodes) {
    const key = beatKey(node);
    const own = written.get(itemKey(key.pk, key.sk));
    if (!own) unmarked.push({ key, marks });
    else
      for (const attribute of marks)
        if (!setsMark(own, attribute, index))
          throw new Error(`a write changes node ${node} and its beat without moving the beat's ${attribute}`);
  }
  if (unmarked.length > room) return [overflowWrite(index)];
  const updates: Write[] = [];
  for (let start = 0; start < unmarked.length; start += 100) {
    const chunk = unmarked.slice(start, start + 100);
    const found = await store.batchGet(chunk.map(({ key }) => key));
    for (const { key, marks } of chunk) {
      const stored = found.get(itemKey(key.pk, key.sk));
      const beat = stored && store.verified(beatKind, stored);
      // No beat (a purged node) or one that does not verify (which every reader refuses): nothing to mark. A beat
      // created later is a registration's, which starts both marks at its own index (`cluster/nodes/store.ts`).
      if (!beat) continue;
      const set: Record<string, number> = {};
      for (const attribute of marks) set[attribute] = index;
      updates.push({
        update: key,
        change: { set: { ...set, mac: store.macOf(beatKind, { ...beat, ...set }) } },
        when: { equals: { mac: beat.mac } },
      });
    }
  }
  // A beat or two absent (purged) may leave room after all; otherwise, the overflow mark.
  return updates.length > room ? [overflowWrite(index)] : updates;
}

/** The overflow mark moved to `index`. */
const overflowWrite = (index: number): Write => ({
  update: { pk: META_PK, sk: MARKS_OVERFLOW_SK },
  change: { set: { value: index } },
});

/**
 * The overflow mark now (strongly consistent; 0 when never written). A snapshot reads it before the beats: when it is
 * not the one read last time, a write changed nodes or allocations without moving their beats' marks, so the marks held
 * are dropped (the held items stay: they are still checked by their MACs).
 */
export async function marksOverflow(store: Store): Promise<number> {
  return Number((await store.get(META_PK, MARKS_OVERFLOW_SK))?.value ?? 0);
}
