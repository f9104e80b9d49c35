/**
 * How many of a job's allocations (or one group's) run on nodes with each value of a property, as Nomad's
 * `propertySet` (`scheduler/feasible/propertyset.go`) counts them for `distinct_property` and `spread`: the
 * existing allocations that are not terminal, plus those this call placed, less those this plan stops. Values a
 * spread does not target count together as `*`.
 */
import { type Allocation, isTerminal } from '../cluster/allocations/model.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import { resolveTarget } from './constraints.ts';
import type { HeldAlloc } from './proposed.ts';

/** Nomad's `getProperty`: a node's value of a target, if it has one. */
export function propertyOf(node: ClusterNode | undefined, property: string): { value: string; found: boolean } {
  if (!node || property === '') return { value: '', found: false };
  return resolveTarget(property, node);
}

const increment = (map: Map<string, number>, key: string, by = 1) => map.set(key, (map.get(key) ?? 0) + by);

export interface PropertyContext {
  nodesById: ReadonlyMap<string, ClusterNode>;
  /** The job's allocations in the snapshot (every status). */
  jobAllocs: readonly Allocation[];
  /** The placements this call made so far, and the allocations it stops: a set made later counts them too. */
  placed: readonly HeldAlloc[];
  stopped: ReadonlySet<HeldAlloc>;
}

export class PropertySet {
  readonly existing = new Map<string, number>();
  private readonly proposed = new Map<string, number>();
  private readonly cleared = new Map<string, number>();
  private combinedCache: Map<string, number> | undefined;
  error = '';
  allowedCount = 0;
  readonly targetValues: ReadonlySet<string>;

  constructor(
    private readonly context: PropertyContext,
    /** The group counted, or "" for every group of the job. */
    readonly taskGroup: string,
    readonly targetAttribute: string,
    targetValues: readonly string[] = [],
  ) {
    this.targetValues = new Set(targetValues);
    for (const alloc of context.jobAllocs) {
      if (!this.counts(alloc) || isTerminal(alloc)) continue;
      const property = propertyOf(context.nodesById.get(alloc.NodeID), targetAttribute);
      if (property.found) increment(this.existing, this.targeted(property.value));
    }
    for (const alloc of context.placed) this.addProposed(alloc);
    for (const alloc of context.stopped) this.setCleared(alloc, true);
  }

  /** Nomad's `setConstraint` for `distinct_property`: the allowed count is the RTarget, 1 when empty. */
  static distinct(context: PropertyContext, taskGroup: string, attribute: string, rTarget: string): PropertySet {
    const set = new PropertySet(context, taskGroup, attribute);
    if (rTarget === '') set.allowedCount = 1;
    else if (/^\+?[0-9]+$/.test(rTarget) && BigInt(rTarget) < 2n ** 64n) set.allowedCount = Number(rTarget);
    else
      set.error = `failed to convert RTarget ${JSON.stringify(rTarget)} to uint64: strconv.ParseUint: parsing ${JSON.stringify(rTarget)}: ${/^\+?[0-9]+$/.test(rTarget) ? 'value out of range' : 'invalid syntax'}`;
    return set;
  }

  private counts(alloc: Pick<HeldAlloc, 'TaskGroup'>): boolean {
    return this.taskGroup === '' || alloc.TaskGroup === this.taskGroup;
  }

  /** Nomad's `targetedPropertyValue`. */
  targeted(value: string): string {
    return this.targetValues.size === 0 || this.targetValues.has(value) ? value : '*';
  }

  /** A placement this call made. */
  addProposed(alloc: HeldAlloc): void {
    if (!this.counts(alloc)) return;
    const property = propertyOf(this.context.nodesById.get(alloc.NodeID), this.targetAttribute);
    if (!property.found) return;
    increment(this.proposed, property.value);
    this.combinedCache = undefined;
  }

  /** An allocation this plan stops (or no longer stops). */
  setCleared(alloc: HeldAlloc, cleared: boolean): void {
    if (!this.counts(alloc)) return;
    const property = propertyOf(this.context.nodesById.get(alloc.NodeID), this.targetAttribute);
    if (!property.found) return;
    increment(this.cleared, property.value, cleared ? 1 : -1);
    if (this.cleared.get(property.value) === 0) this.cleared.delete(property.value);
    this.combinedCache = undefined;
  }

  /** Nomad's `GetCombinedUseMap`, with `PopulateProposed`'s adjustment of the cleared counts by the proposed ones. */
  combined(): Map<string, number> {
    if (this.combinedCache) return this.combinedCache;
    const cleared = new Map(this.cleared);
    for (const value of this.proposed.keys()) {
      const current = cleared.get(value);
      if (current === undefined) continue;
      if (current === 0) cleared.delete(value);
      else if (current > 1) cleared.set(value, current - 1);
    }
    const combined = new Map<string, number>(this.existing);
    for (const [value, count] of this.proposed) increment(combined, this.targeted(value), count);
    for (const [value, count] of cleared) {
      const key = this.targeted(value);
      const have = combined.get(key);
      if (have === undefined) continue;
      combined.set(key, have >= count ? have - count : 0);
    }
    this.combinedCache = combined;
    return combined;
  }

  /** Nomad's `UsedCount`: the node's (targeted) value, an error, and how many allocations use that value. */
  usedCount(node: ClusterNode): { value: string; error: string; count: number } {
    if (this.error) return { value: '', error: this.error, count: 0 };
    const property = propertyOf(node, this.targetAttribute);
    const value = this.targeted(property.value);
    if (!property.found)
      return { value: property.value, error: `missing property ${JSON.stringify(this.targetAttribute)}`, count: 0 };
    return { value, error: '', count: this.combined().get(value) ?? 0 };
  }

  /** Nomad's `SatisfiesDistinctProperties`: "" or why the node is filtered. */
  distinctFailure(node: ClusterNode): string {
    const used = this.usedCount(node);
    if (used.error) return used.error;
    if (used.count < this.allowedCount) return '';
    return `distinct_property: ${this.targetAttribute}=${used.value} used by ${used.count} allocs`;
  }
}
