/**
 * Devices (a task's `resources.device` blocks), as Nomad's `DeviceChecker` and device allocator treat them: a
 * request names `type`, `vendor/type` or `vendor/type/name` and a count; a node is feasible when its device groups
 * (`NodeResources.Devices`) have that many healthy instances of matching groups (else it is filtered as
 * `missing devices`), and a placement is granted that many instances no allocation on the node holds (else the node
 * is exhausted on `devices: no devices match request`, unless the placement may evict the holders of lower
 * priority: `device-preemption.ts`). Partial: the requests' own `constraint` and `affinity`
 * blocks over device attributes are not evaluated — a request that has constraints matches no device (it is never
 * placed on a device it might not accept), and device affinities add no score.
 */
import type { AllocatedDeviceResource } from '../cluster/allocations/resources.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';

export interface DeviceAsk {
  /** Nomad's `RequestedDevice.ID()`: the parts of its name. */
  vendor: string;
  type: string;
  name: string;
  count: number;
  /** Device constraints were given (not evaluated: the request then matches nothing). */
  constrained: boolean;
}

/** One of a node's device groups (`NodeResources.Devices`): its identity and its healthy instances. */
export interface DeviceGroup {
  Vendor: string;
  Type: string;
  Name: string;
  healthy: string[];
}

type Loose = Record<string, unknown>;
const objects = (value: unknown): Loose[] =>
  Array.isArray(value) ? value.filter((entry): entry is Loose => typeof entry === 'object' && entry !== null) : [];
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** A task's device requests, from its `Resources.Devices`. */
export function deviceAsks(resources: Loose): DeviceAsk[] {
  return objects(resources.Devices).map((device) => {
    const parts = text(device.Name).split('/');
    const [vendor, type, name] =
      parts.length === 1
        ? ['', parts[0] ?? '', '']
        : parts.length === 2
          ? [parts[0] ?? '', parts[1] ?? '', '']
          : [parts[0] ?? '', parts[1] ?? '', parts.slice(2).join('/')];
    return {
      vendor,
      type,
      name,
      count: typeof device.Count === 'number' && device.Count > 0 ? device.Count : 1,
      constrained: objects(device.Constraints).length > 0,
    };
  });
}

/** A node's device groups, in the order the node reports them. */
export function groupsOf(node: ClusterNode): DeviceGroup[] {
  return objects((node.NodeResources as Loose | null)?.Devices).map((group) => ({
    Vendor: text(group.Vendor),
    Type: text(group.Type),
    Name: text(group.Name),
    healthy: objects(group.Instances)
      .filter((instance) => instance.Healthy === true)
      .map((instance) => text(instance.ID)),
  }));
}

/** How `assignDevices` and `heldDevices` name one device instance. */
export const instanceKey = (vendor: string, type: string, name: string, id: string): string =>
  `${vendor}/${type}/${name}/${id}`;

/**
 * The instances an allocation holds in one device group (Nomad's `deviceInstances` of `PreemptForDevice`), summed
 * over its tasks.
 */
export function instancesIn(
  alloc: { AllocatedResources: { Tasks: Record<string, { Devices: unknown }> } | null },
  group: Pick<DeviceGroup, 'Vendor' | 'Type' | 'Name'>,
): number {
  let count = 0;
  for (const task of Object.values(alloc.AllocatedResources?.Tasks ?? {}))
    for (const device of objects(task.Devices))
      if (text(device.Vendor) === group.Vendor && text(device.Type) === group.Type && text(device.Name) === group.Name)
        count += Array.isArray(device.DeviceIDs) ? device.DeviceIDs.length : 0;
  return count;
}

/** Nomad's `DeviceIdTuple.Matches` (and a constrained request matching nothing, see above). */
export const matches = (group: DeviceGroup, ask: DeviceAsk): boolean =>
  !ask.constrained &&
  ask.type !== '' &&
  (ask.name === '' || ask.name === group.Name) &&
  (ask.vendor === '' || ask.vendor === group.Vendor) &&
  ask.type === group.Type;

/** Nomad's `DeviceChecker.hasDevices`: enough healthy matching instances for every request, each counted once. */
export function hasDevices(node: ClusterNode, asks: readonly DeviceAsk[]): boolean {
  if (asks.length === 0) return true;
  const groups = groupsOf(node);
  const left = groups.map((group) => group.healthy.length);
  for (const ask of asks) {
    let wanted = ask.count;
    for (let i = 0; i < groups.length && wanted > 0; i++) {
      if (!matches(groups[i] as DeviceGroup, ask)) continue;
      const taken = Math.min(wanted, left[i] as number);
      left[i] = (left[i] as number) - taken;
      wanted -= taken;
    }
    if (wanted > 0) return false;
  }
  return true;
}

/**
 * The instances granted for each of a task's requests, none of `held` (the node's allocations' instances, and
 * those granted to the group's earlier tasks, which this adds to), or undefined when a request cannot be met.
 */
export function assignDevices(
  node: ClusterNode,
  asks: readonly DeviceAsk[],
  held: Set<string>,
): AllocatedDeviceResource[] | undefined {
  const granted: AllocatedDeviceResource[] = [];
  const groups = groupsOf(node);
  for (const ask of asks) {
    let found: AllocatedDeviceResource | undefined;
    for (const group of groups) {
      if (!matches(group, ask)) continue;
      const free = group.healthy.filter((id) => !held.has(instanceKey(group.Vendor, group.Type, group.Name, id)));
      if (free.length < ask.count) continue;
      found = { Vendor: group.Vendor, Type: group.Type, Name: group.Name, DeviceIDs: free.slice(0, ask.count) };
      break;
    }
    if (!found) return undefined;
    for (const id of found.DeviceIDs) held.add(instanceKey(found.Vendor, found.Type, found.Name, id));
    granted.push(found);
  }
  return granted;
}

/** The instances a node's allocations hold, as `assignDevices` keys them. */
export function heldDevices(
  allocs: ReadonlyArray<{ AllocatedResources: { Tasks: Record<string, { Devices: unknown }> } | null }>,
): Set<string> {
  const held = new Set<string>();
  for (const alloc of allocs)
    for (const task of Object.values(alloc.AllocatedResources?.Tasks ?? {}))
      for (const device of objects(task.Devices))
        for (const id of Array.isArray(device.DeviceIDs) ? device.DeviceIDs : [])
          held.add(instanceKey(text(device.Vendor), text(device.Type), text(device.Name), text(id)));
  return held;
}
