/**
 * Which of a group's allocations stop because it has more than its count (Nomad's computeStop): the lost always,
 * then, while canaries are promoted, old allocations holding a canary's name, then migrating ones, then the highest
 * names; a duplicate name can leave more to stop, the highest remaining.
 */
import type { Allocation } from '../cluster/allocations/model.ts';
import type { TaskGroup } from '../cluster/jobs/model.ts';
import { AllocNameIndex, allocIndex } from './alloc-names.ts';
import { stopDescriptions } from './descriptions.ts';
import { byName, serverTerminal } from './group-common.ts';
import type { StopDecision } from './types.ts';

export interface StopInput {
  jobId: string;
  group: TaskGroup;
  nameIndex: AllocNameIndex;
  untainted: Allocation[];
  migrate: Allocation[];
  lost: Allocation[];
  canaries: Allocation[];
  isCanarying: boolean;
}

export interface StopOutput {
  stop: StopDecision[];
  /** Everything stopped here, lost included (the annotation's Stop). */
  stopped: Set<Allocation>;
  untainted: Allocation[];
  migrate: Allocation[];
}

export function computeStop(input: StopInput): StopOutput {
  const { jobId, group, nameIndex } = input;
  const stopped = new Set<Allocation>(input.lost);
  const stop: StopDecision[] = input.lost.map((alloc) => ({
    alloc,
    description: stopDescriptions.lost,
    clientStatus: 'lost' as const,
  }));
  let migrate = input.migrate;
  const canaries = new Set(input.canaries);
  let working = input.isCanarying ? input.untainted.filter((alloc) => !canaries.has(alloc)) : input.untainted;
  let remove = working.filter((alloc) => alloc.ClientStatus !== 'unknown').length + migrate.length - group.Count;
  const stopUnneeded = (alloc: Allocation) => {
    stopped.add(alloc);
    stop.push({ alloc, description: stopDescriptions.notNeeded });
    remove--;
  };
  if (remove > 0) {
    working = byName(
      working.filter((alloc) => !serverTerminal(alloc)),
      jobId,
    );
    if (!input.isCanarying && canaries.size > 0) {
      const canaryNames = new Set(input.canaries.map((alloc) => alloc.Name));
      for (const alloc of working) {
        if (remove <= 0) break;
        if (!canaries.has(alloc) && canaryNames.has(alloc.Name)) stopUnneeded(alloc);
      }
    }
    if (remove > 0 && migrate.length > 0) {
      const names = new AllocNameIndex(
        jobId,
        group.Name,
        group.Count,
        migrate.map((alloc) => alloc.Name),
      ).highest(remove);
      for (const alloc of byName(migrate, jobId)) {
        if (remove <= 0) break;
        if (!names.has(alloc.Name)) continue;
        migrate = migrate.filter((other) => other !== alloc);
        nameIndex.unsetIndex(allocIndex(alloc.Name, jobId, group.Name));
        stopUnneeded(alloc);
      }
    }
    if (remove > 0) {
      const names = nameIndex.highest(remove);
      for (const alloc of working) {
        if (remove <= 0) break;
        if (!stopped.has(alloc) && names.has(alloc.Name)) stopUnneeded(alloc);
      }
      for (const alloc of [...working].reverse()) {
        if (remove <= 0) break;
        if (!stopped.has(alloc)) stopUnneeded(alloc);
      }
    }
  }
  return { stop, stopped, untainted: input.untainted.filter((alloc) => !stopped.has(alloc)), migrate };
}
