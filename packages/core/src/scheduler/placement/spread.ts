/**
 * The `spread` blocks' score, as Nomad's `SpreadIterator` (`scheduler/feasible/spread.go`) gives it: for each spread
 * of the group (and of the job), a node whose value of the attribute has fewer of the group's allocations than its
 * target (the percentage of the group's count; the values not named share what is left as `*`) scores up, weighted
 * by the spread's share of all the weights; with no targets, even spreading scores the least-used values up. Nomad's
 * running state is kept as it keeps it for one evaluation: the sum of the weights of every group scored so far and
 * the lowest boost seen.
 */
import type { ClusterNode } from '../cluster/nodes/model.ts';
import type { GroupAsk, Spread } from './asks.ts';
import { type PropertyContext, PropertySet, propertyOf } from './property-set.ts';
import type { HeldAlloc } from './proposed.ts';

/** Nomad's `implicitTarget`. */
const implicitTarget = '*';

interface SpreadInfo {
  weight: number;
  desiredCounts: Map<string, number>;
}

/** Nomad's `evenSpreadScoreBoost`. */
function evenSpreadBoost(set: PropertySet, node: ClusterNode): number {
  const combined = set.combined();
  if (combined.size === 0) return 0;
  const property = propertyOf(node, set.targetAttribute);
  if (!property.found) return -1;
  const current = combined.get(property.value) ?? 0;
  let min = 0;
  let max = 0;
  for (const count of combined.values()) {
    if (min === 0 || count < min) min = count;
    if (max === 0 || count > max) max = count;
  }
  const deltaBoost = min === 0 ? -1 : (min - current) / min;
  if (current !== min) return deltaBoost;
  if (min === max) return -1;
  if (min === 0) return 1;
  return (max - min) / min;
}

export class SpreadScorer {
  private readonly sets = new Map<string, PropertySet[]>();
  private readonly infos = new Map<string, Map<string, SpreadInfo>>();
  private sumWeights = 0;
  private lowestBoost = -1;

  constructor(private readonly context: PropertyContext) {}

  /** Prepares the group's property sets and targets (once per group); whether it has any spread. */
  setGroup(group: GroupAsk): boolean {
    if (!this.sets.has(group.name)) {
      const make = (spread: Spread) =>
        new PropertySet(
          this.context,
          group.name,
          spread.Attribute,
          spread.SpreadTarget.map((target) => target.Value),
        );
      this.sets.set(group.name, [...group.jobSpreads.map(make), ...group.groupSpreads.map(make)]);
    }
    if (!this.infos.has(group.name)) {
      const infos = new Map<string, SpreadInfo>();
      for (const spread of [...group.groupSpreads, ...group.jobSpreads]) {
        const desiredCounts = new Map<string, number>();
        let sum = 0;
        for (const target of spread.SpreadTarget) {
          const desired = (target.Percent / 100) * group.count;
          desiredCounts.set(target.Value, desired);
          sum += desired;
        }
        if (sum > 0 && sum < group.count) desiredCounts.set(implicitTarget, group.count - sum);
        infos.set(spread.Attribute, { weight: spread.Weight, desiredCounts });
        this.sumWeights += spread.Weight;
      }
      this.infos.set(group.name, infos);
    }
    return (this.sets.get(group.name) ?? []).length > 0;
  }

  /** The node's total spread score for the group (0: no spread applies, and Nomad then adds no score). */
  score(node: ClusterNode, group: string): number {
    let total = 0;
    const infos = this.infos.get(group);
    for (const set of this.sets.get(group) ?? []) {
      const used = set.usedCount(node);
      if (used.error) {
        total -= 1;
        continue;
      }
      const count = used.count + 1; // this placement included
      const info = infos?.get(set.targetAttribute);
      if (!info) continue;
      if (info.desiredCounts.size === 0) {
        total += evenSpreadBoost(set, node);
        continue;
      }
      const desired = info.desiredCounts.get(used.value) ?? info.desiredCounts.get(implicitTarget);
      if (desired === undefined) {
        total -= 1;
        continue;
      }
      const weight = info.weight / this.sumWeights;
      if (desired === 0) {
        total += this.lowestBoost;
        continue;
      }
      const boost = ((desired - count) / desired) * weight;
      total += boost;
      if (boost < this.lowestBoost) this.lowestBoost = boost;
    }
    return total;
  }

  addProposed(alloc: HeldAlloc): void {
    for (const sets of this.sets.values()) for (const set of sets) set.addProposed(alloc);
  }

  setCleared(alloc: HeldAlloc, cleared: boolean): void {
    for (const sets of this.sets.values()) for (const set of sets) set.setCleared(alloc, cleared);
  }
}
