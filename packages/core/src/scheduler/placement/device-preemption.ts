/**
 * Preemption for a device request (Nomad's `PreemptForDevice` and `selectBestAllocs`, `scheduler/feasible/
 * preemption.go`), used by ranking (`rank.ts`) when a task's device request finds too few free instances on a node
 * and the placement may evict:
 *
 * 1. per device group of the node that matches the request (`devices.ts` `matches`), the allocations of other jobs
 *    holding instances of it, grouped by their job's priority, lowest first (an allocation of unknown priority, or
 *    within 10 of the placing job's, is never a candidate);
 * 2. in that order, allocations are taken until the instances they hold plus the group's free ones cover the count:
 *    the taken set is one option; a group that cannot be covered gives none;
 * 3. each option is trimmed (most instances first, kept only until the count is met) and the option whose distinct
 *    priorities sum lowest wins (the first on a tie; Nomad walks its groups in map order, this in the node's order).
 *
 * Null when no group gives an option: the node is then exhausted on devices.
 */
import type { ClusterNode } from '../cluster/nodes/model.ts';
import { type DeviceAsk, groupsOf, instanceKey, instancesIn, matches } from './devices.ts';
import { preemptionPriorityDelta } from './preemption.ts';
import type { HeldAlloc } from './proposed.ts';

export interface DevicePreemptionInput {
  node: ClusterNode;
  /** The request that found too few free instances. */
  ask: DeviceAsk;
  /** The node's allocations this placement keeps (the candidates are among them). */
  allocs: readonly HeldAlloc[];
  /** The instances taken now (`heldDevices` of `allocs`, and those granted to the group's earlier requests). */
  held: ReadonlySet<string>;
  /** The placing job. */
  job: { ID: string; Namespace: string; Priority: number };
  /** The priority of an allocation's job, undefined when unknown (never preempted). */
  priorityOf: (alloc: HeldAlloc) => number | undefined;
}

interface Option {
  allocs: HeldAlloc[];
  instances: Map<HeldAlloc, number>;
}

/** The allocations to evict so that the request finds its instances, or null when none does. */
export function preemptForDevice(input: DevicePreemptionInput): HeldAlloc[] | null {
  const { ask, job } = input;
  const options: Option[] = [];
  for (const group of groupsOf(input.node)) {
    if (!matches(group, ask)) continue;
    const instances = new Map<HeldAlloc, number>();
    const byPriority = new Map<number, HeldAlloc[]>();
    for (const alloc of input.allocs) {
      if (alloc.JobID === job.ID && alloc.Namespace === job.Namespace) continue;
      const count = instancesIn(alloc, group);
      if (count === 0) continue;
      const priority = input.priorityOf(alloc);
      if (priority === undefined || job.Priority - priority < preemptionPriorityDelta) continue;
      instances.set(alloc, count);
      const same = byPriority.get(priority) ?? [];
      same.push(alloc);
      byPriority.set(priority, same);
    }
    const free = group.healthy.filter((id) => !input.held.has(instanceKey(group.Vendor, group.Type, group.Name, id)));
    let freed = 0;
    const taken: HeldAlloc[] = [];
    search: for (const priority of [...byPriority.keys()].sort((a, b) => a - b))
      for (const alloc of byPriority.get(priority) ?? []) {
        freed += instances.get(alloc) ?? 0;
        taken.push(alloc);
        if (freed + free.length >= ask.count) {
          options.push({ allocs: taken, instances });
          break search;
        }
      }
  }
  let best: HeldAlloc[] | null = null;
  let bestPriority = Number.POSITIVE_INFINITY;
  for (const option of options) {
    const count = (alloc: HeldAlloc) => option.instances.get(alloc) ?? 0;
    const kept: HeldAlloc[] = [];
    const priorities = new Set<number>();
    let freed = 0;
    for (const alloc of [...option.allocs].sort((a, b) => count(b) - count(a))) {
      if (freed >= ask.count) break;
      freed += count(alloc);
      kept.push(alloc);
      priorities.add(input.priorityOf(alloc) ?? 0);
    }
    const net = [...priorities].reduce((sum, priority) => sum + priority, 0);
    if (net < bestPriority) {
      bestPriority = net;
      best = kept;
    }
  }
  return best;
}
