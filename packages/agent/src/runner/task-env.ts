/**
 * A task's environment, as Nomad's `client/taskenv` builds it for `raw_exec`: the agent's own environment (raw_exec
 * does not isolate the task) without the credentials Nomad's default `env.denylist` drops and the agent's own
 * (`NOMAD_CLIENT_INTRO_TOKEN`, `NOMAD_TOKEN`, `KEYHAVEN_*`), then Nomad's variables (`NOMAD_ALLOC_DIR`,
 * `NOMAD_TASK_DIR`, `NOMAD_SECRETS_DIR`, the allocation, job, group and task names, region, datacenter, limits, meta,
 * and per port label `NOMAD_PORT_`, `NOMAD_IP_`, `NOMAD_ADDR_`, `NOMAD_HOST_PORT_` …), then the task's `Env`, each value
 * interpolated. `${NAME}` is replaced as Nomad's `ReplaceEnv` does: a variable of the environment, or `node.*`,
 * `attr.*` and `meta.*` of the node; an unknown name is left as written.
 */
import type { TaskDirs } from './alloc-dir.ts';
import type { Allocation, GroupSpec, JobSpec, NodeInfo, TaskSpec } from './types.ts';

/** Nomad's default `env.denylist`, and the agent's own credentials. */
const denied = new Set([
  'CONSUL_TOKEN',
  'CONSUL_HTTP_TOKEN',
  'CONSUL_HTTP_TOKEN_FILE',
  'VAULT_TOKEN',
  'NOMAD_LICENSE',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'GOOGLE_APPLICATION_CREDENTIALS',
  'NOMAD_CLIENT_INTRO_TOKEN',
  'NOMAD_TOKEN',
]);
const deniedPrefixes = ['KEYHAVEN_'];

/** The index in an allocation name `<job>.<group>[<index>]`. */
export function allocIndex(name: string): number {
  const match = /\[(\d+)\]$/.exec(name);
  return match ? Number(match[1]) : 0;
}

const hostPort = (ip: string, port: number) => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);

export interface TaskEnvInput {
  alloc: Allocation;
  job: JobSpec;
  group: GroupSpec;
  task: TaskSpec;
  node: NodeInfo;
  dirs: TaskDirs;
  sharedDir: string;
  hostEnv: NodeJS.ProcessEnv;
}

/** The port variables of the allocation's ports (Nomad's `addPorts`), with the node's address when a port has none. */
export function portEnv(alloc: Allocation, node: NodeInfo): Record<string, string> {
  const env: Record<string, string> = {};
  for (const port of alloc.AllocatedResources?.Shared?.Ports ?? []) {
    const ip = port.HostIP || node.Address;
    const mapped = String(port.To > 0 ? port.To : port.Value);
    env[`NOMAD_ADDR_${port.Label}`] = hostPort(ip, port.Value);
    env[`NOMAD_HOST_ADDR_${port.Label}`] = hostPort(ip, port.Value);
    env[`NOMAD_IP_${port.Label}`] = ip;
    env[`NOMAD_HOST_IP_${port.Label}`] = ip;
    env[`NOMAD_PORT_${port.Label}`] = mapped;
    env[`NOMAD_ALLOC_PORT_${port.Label}`] = mapped;
    env[`NOMAD_HOST_PORT_${port.Label}`] = String(port.Value);
  }
  return env;
}

/** Nomad's variables of the allocation and group, without a task's (for group services). */
export function groupEnv(alloc: Allocation, job: JobSpec, group: GroupSpec, node: NodeInfo): Record<string, string> {
  const env: Record<string, string> = {
    NOMAD_ALLOC_ID: alloc.ID,
    NOMAD_SHORT_ALLOC_ID: alloc.ID.slice(0, 8),
    NOMAD_ALLOC_NAME: alloc.Name,
    NOMAD_ALLOC_INDEX: String(allocIndex(alloc.Name)),
    NOMAD_GROUP_NAME: group.Name,
    NOMAD_JOB_ID: job.ID,
    NOMAD_JOB_NAME: job.Name,
    NOMAD_JOB_PARENT_ID: job.ParentID ?? '',
    NOMAD_NAMESPACE: alloc.Namespace || job.Namespace,
    NOMAD_REGION: job.Region,
    NOMAD_DC: node.Datacenter,
    ...portEnv(alloc, node),
  };
  for (const meta of [job.Meta, group.Meta])
    for (const [key, value] of Object.entries(meta ?? {})) {
      env[`NOMAD_META_${key}`] = value;
      env[`NOMAD_META_${key.toUpperCase()}`] = value;
    }
  return env;
}

/** `${NAME}` replaced from `env` and the node (Nomad's `ReplaceEnv`); unknown names stay as written. */
export function interpolate(text: string, env: Record<string, string>, node: NodeInfo): string {
  return text.replace(/\$\{([A-Za-z0-9_.-]+)\}/g, (whole, name: string) => {
    if (Object.hasOwn(env, name)) return env[name] as string;
    switch (name) {
      case 'node.unique.id':
        return node.ID;
      case 'node.unique.name':
        return node.Name;
      case 'node.datacenter':
        return node.Datacenter;
      case 'node.class':
        return node.NodeClass;
      case 'node.pool':
        return node.NodePool;
    }
    if (name.startsWith('attr.') && Object.hasOwn(node.Attributes, name.slice(5)))
      return node.Attributes[name.slice(5)] as string;
    if (name.startsWith('meta.') && Object.hasOwn(node.Meta, name.slice(5))) return node.Meta[name.slice(5)] as string;
    return whole;
  });
}

/** The whole environment of the task's process. */
export function taskEnv(input: TaskEnvInput): Record<string, string> {
  const { alloc, job, group, task, node, dirs } = input;
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(input.hostEnv))
    if (value !== undefined && !denied.has(key) && !deniedPrefixes.some((prefix) => key.startsWith(prefix)))
      env[key] = value;
  const resources = alloc.AllocatedResources?.Tasks?.[task.Name];
  const memory = resources?.Memory?.MemoryMB ?? task.Resources?.MemoryMB ?? 0;
  const memoryMax = resources?.Memory?.MemoryMaxMB ?? task.Resources?.MemoryMaxMB ?? 0;
  const cpu = resources?.Cpu?.CpuShares ?? task.Resources?.CPU ?? 0;
  Object.assign(env, groupEnv(alloc, job, group, node), {
    NOMAD_ALLOC_DIR: input.sharedDir,
    NOMAD_TASK_DIR: dirs.local,
    NOMAD_SECRETS_DIR: dirs.secrets,
    NOMAD_TASK_NAME: task.Name,
    NOMAD_MEMORY_LIMIT: String(memory),
    NOMAD_CPU_LIMIT: String(cpu),
  });
  if (memoryMax > 0) env.NOMAD_MEMORY_MAX_LIMIT = String(memoryMax);
  for (const [key, value] of Object.entries(task.Meta ?? {})) {
    env[`NOMAD_META_${key}`] = value;
    env[`NOMAD_META_${key.toUpperCase()}`] = value;
  }
  const own = { ...env };
  for (const [key, value] of Object.entries(task.Env ?? {}))
    if (typeof value === 'string') env[key] = interpolate(value, own, node);
  return env;
}
