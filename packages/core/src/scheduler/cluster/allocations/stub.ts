/**
 * How allocations are shown: Nomad's list stub (`Allocation.Stub`, `AllocListStub`) and the full allocation with its
 * job rehydrated from the job's version item (the table never holds a job per allocation), which the Nomad routes
 * send as `json.ts` shapes it.
 */
import { allocatedResourcesJson } from './json.ts';
import type { Allocation } from './model.ts';
import type { Allocations, StoredAllocation } from './store.ts';

/** Which optional fields a stub carries (Nomad's `AllocStubFields`: task states yes, resources no, by default). */
export interface StubFields {
  taskStates: boolean;
  resources: boolean;
}

/** Nomad's `Allocation.Stub`: the list form of an allocation. */
export function allocationStub(
  alloc: StoredAllocation,
  fields: StubFields = { taskStates: true, resources: false },
): Record<string, unknown> {
  return {
    ID: alloc.ID,
    EvalID: alloc.EvalID,
    Name: alloc.Name,
    Namespace: alloc.Namespace,
    NodeID: alloc.NodeID,
    NodeName: alloc.NodeName,
    JobID: alloc.JobID,
    JobType: alloc.JobType,
    JobVersion: alloc.JobVersion,
    TaskGroup: alloc.TaskGroup,
    ...(fields.resources ? { AllocatedResources: allocatedResourcesJson(alloc.AllocatedResources) } : {}),
    DesiredStatus: alloc.DesiredStatus,
    DesiredDescription: alloc.DesiredDescription,
    ClientStatus: alloc.ClientStatus,
    ClientDescription: alloc.ClientDescription,
    DesiredTransition: alloc.DesiredTransition,
    TaskStates: fields.taskStates ? alloc.TaskStates : null,
    DeploymentStatus: alloc.DeploymentStatus,
    FollowupEvalID: alloc.FollowupEvalID,
    NextAllocation: alloc.NextAllocation,
    RescheduleTracker: alloc.RescheduleTracker,
    PreemptedAllocations: alloc.PreemptedAllocations ?? null,
    PreemptedByAllocation: alloc.PreemptedByAllocation ?? '',
    CreateIndex: alloc.CreateIndex,
    ModifyIndex: alloc.ModifyIndex,
    CreateTime: alloc.CreateTime,
    ModifyTime: alloc.ModifyTime,
  };
}

/** The allocations with their jobs rehydrated, each job version read once. */
export async function withJobs(allocations: Allocations, allocs: StoredAllocation[]): Promise<Allocation[]> {
  const jobs = new Map<string, Promise<Allocation['Job']>>();
  return Promise.all(
    allocs.map(async (alloc) => {
      const key = `${alloc.Namespace}\u0000${alloc.JobID}\u0000${alloc.JobVersion}`;
      if (!jobs.has(key))
        jobs.set(
          key,
          allocations.withJob(alloc).then((full) => full.Job),
        );
      const { JobType: _type, ...rest } = alloc;
      return { ...rest, Job: (await jobs.get(key)) ?? null };
    }),
  );
}
