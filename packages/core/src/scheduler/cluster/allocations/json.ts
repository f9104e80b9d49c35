/**
 * The full allocation and its granted resources as Nomad's HTTP API and event stream encode them
 * (`structs.Allocation`, `AllocatedResources`): go-msgpack's omitempty rule (`../omit-empty.ts`). The one place an
 * allocation is shaped for a Nomad route or event; the agent's own routes (`client/`) read the stored form.
 */
import { networksJson, omitEmpty } from '../omit-empty.ts';
import type { Allocation } from './model.ts';
import type { AllocatedResources } from './resources.ts';

/** `AllocatedResources` as Nomad encodes it: its networks, ports and port mappings without their empty fields. */
export function allocatedResourcesJson(resources: AllocatedResources | null): unknown {
  if (!resources) return resources;
  const tasks: Record<string, unknown> = {};
  for (const [name, task] of Object.entries(resources.Tasks ?? {}))
    tasks[name] = { ...task, Networks: networksJson(task.Networks) };
  const shared = resources.Shared;
  return {
    ...resources,
    Tasks: tasks,
    Shared: shared && {
      ...shared,
      Networks: networksJson(shared.Networks),
      Ports: Array.isArray(shared.Ports) ? shared.Ports.map((port) => omitEmpty(port)) : shared.Ports,
    },
  };
}

/**
 * The full allocation as Nomad's HTTP API and event stream send it (`structs.Allocation`, `_struct` omitempty):
 * every empty field left out (`DesiredTransition` when none of its flags is set, `Job` when not rehydrated, `""`, `0`,
 * `false`, `null`, empty maps and lists). `JobVersion`, which Nomad's `Allocation` lacks, is kept for this service's
 * console.
 */
export function allocationJson(alloc: Allocation): Partial<Allocation> {
  const { JobType: _type, ...rest } = alloc as Allocation & { JobType?: string };
  const shaped = omitEmpty(
    { ...rest, AllocatedResources: allocatedResourcesJson(rest.AllocatedResources) as AllocatedResources },
    ['DesiredTransition'],
  );
  return { ...shaped, JobVersion: rest.JobVersion };
}
