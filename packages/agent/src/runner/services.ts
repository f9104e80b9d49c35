/**
 * The services an allocation should have registered with the service's own registry (Nomad's `nomad` service
 * provider, `client/serviceregistration/nsd`): the group's services while the allocation runs (Nomad's group service
 * hook: from its start until it is stopped or done), a task's services while that task runs. Each is Nomad's
 * `ServiceRegistration`: ID `_nomad-task-<alloc>-<task | group-<group>>-<service>-<port label>`, the node's address (or
 * the port's host IP) and the port the label names in the allocation's `AllocatedResources` (a number as the label is
 * taken as the port). Services of another provider (`consul`, Nomad's default) are not this agent's to register.
 * Names and tags are interpolated with the task's (or group's) variables as Nomad's are.
 */
import type { ServiceRegistration } from '../protocol.ts';
import type { AllocRunner } from './alloc-runner.ts';
import { groupEnv, interpolate } from './task-env.ts';
import type { Allocation, NodeInfo, ServiceSpec } from './types.ts';

function resolvePort(alloc: Allocation, label: string, node: NodeInfo): { address: string; port: number } {
  const found = (alloc.AllocatedResources?.Shared?.Ports ?? []).find((port) => port.Label === label);
  if (found) return { address: found.HostIP || node.Address, port: found.Value };
  const number = /^\d+$/.test(label) ? Number(label) : 0;
  return { address: node.Address, port: number };
}

function registration(
  alloc: Allocation,
  node: NodeInfo,
  workload: string,
  defaultName: string,
  spec: ServiceSpec,
  env: Record<string, string>,
): ServiceRegistration {
  const name = interpolate(spec.Name || defaultName, env, node);
  const label = spec.PortLabel ?? '';
  const { address, port } = resolvePort(alloc, label, node);
  return {
    ID: `_nomad-task-${alloc.ID}-${workload}-${name}-${label}`,
    ServiceName: name,
    Namespace: alloc.Namespace,
    NodeID: node.ID,
    Datacenter: node.Datacenter,
    JobID: alloc.JobID,
    AllocID: alloc.ID,
    Tags: (spec.Tags ?? []).map((tag) => interpolate(tag, env, node)),
    Address: address,
    Port: port,
  };
}

const nomadProvider = (spec: ServiceSpec) => spec.Provider === 'nomad';

/** Every service of the allocation's group and tasks (whether or not it should be registered now). */
export function allServices(alloc: Allocation, node: NodeInfo): ServiceRegistration[] {
  return servicesOf(alloc, node, () => true, true);
}

/** The services that should be registered now, given the runner's state. */
export function wantedServices(runner: AllocRunner, node: NodeInfo): ServiceRegistration[] {
  const states = runner.taskStates;
  const live = !runner.stopped && !runner.terminal;
  return servicesOf(runner.alloc, node, (task) => live && states[task]?.State === 'running', live);
}

function servicesOf(
  alloc: Allocation,
  node: NodeInfo,
  taskRunning: (task: string) => boolean,
  groupLive: boolean,
): ServiceRegistration[] {
  const job = alloc.Job;
  const group = job?.TaskGroups?.find((candidate) => candidate.Name === alloc.TaskGroup);
  if (!job || !group) return [];
  const env = groupEnv(alloc, job, group, node);
  const services: ServiceRegistration[] = [];
  if (groupLive)
    for (const spec of (group.Services ?? []).filter(nomadProvider))
      services.push(registration(alloc, node, `group-${group.Name}`, `${job.Name}-${group.Name}`, spec, env));
  for (const task of group.Tasks ?? [])
    if (taskRunning(task.Name))
      for (const spec of (task.Services ?? []).filter(nomadProvider))
        services.push(
          registration(alloc, node, task.Name, `${job.Name}-${group.Name}-${task.Name}`, spec, {
            ...env,
            NOMAD_TASK_NAME: task.Name,
          }),
        );
  return services;
}
