/**
 * Whether a task group changed in a way that needs its tasks restarted (Nomad's `tasksUpdated`, `scheduler/util.go`):
 * such a change is a destructive update (stop and place anew); any other change is an in-place update. The jobs are
 * Nomad's JSON; a field that is absent, null or empty counts as unset on both sides, as Nomad's Go structs compare.
 * Answers the first difference found (its label), or undefined when there is none.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Job } from '../cluster/jobs/model.ts';
import { canonicalNetworks } from '../cluster/jobs/networks.ts';

type Loose = Record<string, unknown>;

const isObject = (value: unknown): value is Loose =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The value with unset parts (null, undefined, empty objects and arrays) removed; undefined when nothing is left. */
function normal(value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.map((entry) => normal(entry) ?? null);
  if (isObject(value)) {
    const out: Loose = {};
    for (const key of Object.keys(value).sort()) {
      const entry = normal(value[key]);
      if (entry !== undefined) out[key] = entry;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  return value;
}

const same = (a: unknown, b: unknown): boolean => isDeepStrictEqual(normal(a), normal(b));
const objectOf = (value: unknown): Loose => (isObject(value) ? value : {});
const listOf = (value: unknown): Loose[] => (Array.isArray(value) ? value.filter(isObject) : []);
const field = (value: unknown, key: string): unknown => objectOf(value)[key];

function groupOf(job: Job, name: string): Loose | undefined {
  return job.TaskGroups.find((group) => group.Name === name);
}

/** A network's ports as Nomad compares them: dynamic ports' values do not matter. */
function portMap(network: Loose): unknown[] {
  const ports: unknown[] = [];
  for (const port of listOf(network.ReservedPorts))
    ports.push([port.Label ?? '', port.Value ?? 0, port.To ?? 0, port.HostNetwork ?? '']);
  for (const port of listOf(network.DynamicPorts))
    ports.push([port.Label ?? '', -1, port.To ?? 0, port.HostNetwork ?? '']);
  return ports;
}

/** Nomad compares canonical networks: a job stored before its networks were canonicalised compares as it is now. */
function networkUpdated(a: unknown, b: unknown): string | undefined {
  const netA = listOf(canonicalNetworks(a));
  const netB = listOf(canonicalNetworks(b));
  if (netA.length !== netB.length) return 'network lengths';
  for (const [i, an] of netA.entries()) {
    const bn = netB[i] as Loose;
    for (const key of ['Mode', 'MBits', 'Hostname', 'DNS', 'CNI'])
      if (!same(an[key], bn[key])) return `network ${key.toLowerCase()}`;
    if (!same(portMap(an), portMap(bn))) return 'network port map';
  }
  return undefined;
}

function consulUpdated(a: unknown, b: unknown): string | undefined {
  if ((field(a, 'Namespace') ?? '') !== (field(b, 'Namespace') ?? '')) return 'consul namespace';
  if (isObject(a) && isObject(b)) {
    if ((a.Cluster ?? '') !== (b.Cluster ?? '')) return 'consul cluster';
    if ((a.Partition ?? '') !== (b.Partition ?? '')) return 'consul partition';
  }
  return undefined;
}

function connectUpdated(a: unknown, b: unknown): string | undefined {
  if (!isObject(a) && !isObject(b)) return undefined;
  if (!isObject(a) || !isObject(b)) return isObject(b) ? 'connect added' : 'connect removed';
  if (Boolean(a.Native) !== Boolean(b.Native)) return 'connect native';
  if (!same(a.Gateway, b.Gateway)) return 'connect gateway';
  if (!same(a.SidecarTask, b.SidecarTask)) return 'connect sidecar task';
  const sidecarA = a.SidecarService;
  const sidecarB = b.SidecarService;
  if (isObject(sidecarA) !== isObject(sidecarB)) return 'connect sidecar service';
  if ((field(sidecarA, 'Port') ?? '') !== (field(sidecarB, 'Port') ?? '')) return 'connect port';
  return undefined;
}

function connectServiceUpdated(a: unknown, b: unknown): string | undefined {
  for (const serviceA of listOf(a)) {
    if (!isObject(serviceA.Connect)) continue;
    const serviceB = listOf(b).find((service) => service.Name === serviceA.Name);
    if (!serviceB) continue;
    const changed = connectUpdated(serviceA.Connect, serviceB.Connect);
    if (changed) return changed;
    if ((serviceA.PortLabel ?? '') !== (serviceB.PortLabel ?? '')) return 'connect service port label';
    if ((serviceA.Cluster ?? '') !== (serviceB.Cluster ?? '')) return 'connect service cluster';
  }
  return undefined;
}

const renderTemplates = (policy: unknown): boolean => field(policy, 'RenderTemplates') === true;

/** Job, group and task meta merged, the task's winning (Nomad's CombinedTaskMeta). */
const combinedMeta = (job: Job, group: Loose, task: Loose): Loose => ({
  ...objectOf(job.Meta),
  ...objectOf(group.Meta),
  ...objectOf(task.Meta),
});

const taskFields = [
  ['Driver', 'task driver'],
  ['User', 'task user'],
  ['Config', 'task config'],
  ['Env', 'task env'],
  ['Artifacts', 'task artifacts'],
  ['Vault', 'task vault'],
  ['Secrets', 'task secrets'],
  ['Templates', 'task templates'],
  ['CSIPluginConfig', 'task csi config'],
  ['VolumeMounts', 'task volume mount'],
] as const;

const resourceFields = [
  ['CPU', 'task cpu'],
  ['Cores', 'task cores'],
  ['MemoryMB', 'task memory'],
  ['MemoryMaxMB', 'task memory max'],
  ['Devices', 'task devices'],
  ['NUMA', 'numa'],
  ['SecretsMB', 'task secrets'],
] as const;

function taskUpdated(jobA: Job, jobB: Job, groupA: Loose, groupB: Loose, at: Loose): string | undefined {
  const bt = listOf(groupB.Tasks).find((task) => task.Name === at.Name);
  if (!bt) return 'task deleted';
  for (const [key, label] of taskFields) if (!same(at[key], bt[key])) return label;
  const consul = consulUpdated(at.Consul, bt.Consul);
  if (consul) return consul;
  if (!same(combinedMeta(jobA, groupA, at), combinedMeta(jobB, groupB, bt))) return 'task meta';
  const network = networkUpdated(field(at.Resources, 'Networks'), field(bt.Resources, 'Networks'));
  if (network) return network;
  for (const [key, label] of resourceFields)
    if (!same(field(at.Resources, key), field(bt.Resources, key))) return label;
  if (!same(at.Identity, bt.Identity) || !same(at.Identities, bt.Identities)) return 'task identity';
  if (Boolean(field(at.LogConfig, 'Disabled')) !== Boolean(field(bt.LogConfig, 'Disabled'))) return 'task log disabled';
  if (renderTemplates(at.RestartPolicy) !== renderTemplates(bt.RestartPolicy)) return 'task restart render_templates';
  return undefined;
}

/**
 * The first change of group `name` from `oldJob` to `newJob` that needs a restart, or undefined. Compared as Nomad
 * calls it, the new job first: its services' connect blocks are the ones looked at (one added reads `connect removed`).
 */
export function tasksUpdated(oldJob: Job, newJob: Job, name: string): string | undefined {
  const [jobA, jobB] = [newJob, oldJob];
  const a = groupOf(jobA, name);
  const b = groupOf(jobB, name);
  if (!a || !b) return 'task group';
  const tasksA = listOf(a.Tasks);
  const tasksB = listOf(b.Tasks);
  if (tasksA.length !== tasksB.length) return 'number of tasks';
  if (!same(a.EphemeralDisk, b.EphemeralDisk)) return 'ephemeral disk';
  const changed =
    networkUpdated(a.Networks, b.Networks) ??
    consulUpdated(a.Consul, b.Consul) ??
    connectServiceUpdated(a.Services, b.Services);
  if (changed) return changed;
  if (!same(a.Volumes, b.Volumes)) return 'volume request';
  if (renderTemplates(a.RestartPolicy) !== renderTemplates(b.RestartPolicy)) return 'group restart render_templates';
  for (const task of tasksA) {
    const taskChanged = taskUpdated(jobA, jobB, a, b, task);
    if (taskChanged) return taskChanged;
  }
  return undefined;
}
