/**
 * Ports, as Nomad's `NetworkIndex` (`nomad/structs/network.go`) keeps them for one node: the ports in use on each
 * address (the node's reserved host ports, each host network address's own reserved ports, and every port of its
 * allocations), the node's host networks by alias, and its dynamic range (Nomad's default 20000–32000). A group's
 * network ask is offered its static ports where they are free and its dynamic ports picked at random in the range
 * (twenty random probes, then an exact search, as Nomad's), from the placement's seeded generator.
 */
import type { AllocatedPort, AllocatedResources, NetworkResource } from '../cluster/allocations/resources.ts';
import type { ClusterNode } from '../cluster/nodes/model.ts';
import type { NetworkAsk, PortAsk } from './asks.ts';
import type { Random } from './shuffle.ts';

export const defaultMinDynamicPort = 20000;
export const defaultMaxDynamicPort = 32000;
const maxValidPort = 65536;
const maxRandomAttempts = 20;

interface Address {
  Alias: string;
  Address: string;
  ReservedPorts: string;
}

type Loose = Record<string, unknown>;
const objects = (value: unknown): Loose[] =>
  Array.isArray(value) ? value.filter((entry): entry is Loose => typeof entry === 'object' && entry !== null) : [];
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** Nomad's `ParsePortRanges` ("22,80,8000-8100"): the ports, or an error message. */
export function parsePortRanges(spec: string): number[] | string {
  if (spec === '') return [];
  const ports: number[] = [];
  let count = 0;
  const parse = (value: string): number | string => {
    if (!/^\+?[0-9]+$/.test(value)) return `strconv.ParseUint: parsing ${JSON.stringify(value)}: invalid syntax`;
    return Number(value);
  };
  for (const raw of spec.split(',')) {
    const part = raw.trim();
    const range = part.split('-');
    if (range.length === 1) {
      if (part === '') return "can't specify empty port";
      const port = parse(part);
      if (typeof port === 'string') return port;
      if (port === 0) return 'port must be > 0';
      if (port > maxValidPort) return `port must be < ${maxValidPort} but found ${port}`;
      if (++count > maxValidPort) return `maximum of ${maxValidPort} ports can be reserved`;
      ports.push(port);
    } else if (range.length === 2) {
      const start = parse(range[0] as string);
      if (typeof start === 'string') return start;
      const end = parse(range[1] as string);
      if (typeof end === 'string') return end;
      if (end < start) return `invalid range: ending value (${end}) less than starting (${start}) value`;
      if (start === 0) return 'port must be > 0';
      if (end > maxValidPort) return `port must be < ${maxValidPort} but found ${end}`;
      count += end - start;
      if (count > maxValidPort) return `maximum of ${maxValidPort} ports can be reserved`;
      for (let port = start; port <= end; port++) ports.push(port);
    } else return 'can only parse single port numbers or port ranges (ex. 80,100-120,150)';
  }
  return ports;
}

export type Offer = AllocatedPort[];

export class NetworkIndex {
  private readonly used = new Map<string, Set<number>>();
  private readonly hostNetworks = new Map<string, Address[]>();
  minDynamicPort = defaultMinDynamicPort;
  maxDynamicPort = defaultMaxDynamicPort;
  /** The address a group network's `IP` shows (Nomad's `AllocatedPortsToNetworkResouce`). */
  hostIP = '';

  private usedFor(ip: string): Set<number> {
    let set = this.used.get(ip);
    if (!set) {
      set = new Set();
      this.used.set(ip, set);
    }
    return set;
  }

  /** Nomad's `SetNode`: "" or why the node's networks cannot be indexed. */
  setNode(node: ClusterNode): string {
    const resources = (node.NodeResources ?? {}) as Loose;
    const reserved = (node.ReservedResources ?? {}) as Loose;
    const reservedNetworks = (reserved.Networks ?? {}) as Loose;
    const global = parsePortRanges(text(reservedNetworks.ReservedHostPorts));
    if (typeof global === 'string') return `error parsing reserved_ports: ${global}`;
    for (const network of objects(resources.Networks)) {
      if (text(network.Device) === '') continue;
      const used = this.usedFor(text(network.IP));
      for (const port of global) used.add(port);
    }
    const nodeNetworks = objects(resources.NodeNetworks);
    for (const network of nodeNetworks) {
      for (const entry of objects(network.Addresses)) {
        const address: Address = {
          Alias: text(entry.Alias),
          Address: text(entry.Address),
          ReservedPorts: text(entry.ReservedPorts),
        };
        const list = this.hostNetworks.get(address.Alias) ?? [];
        list.push(address);
        this.hostNetworks.set(address.Alias, list);
        const used = this.usedFor(address.Address);
        for (const port of global) used.add(port);
        if (address.ReservedPorts !== '') {
          const own = parsePortRanges(address.ReservedPorts);
          if (typeof own === 'string') return `error parsing reserved_ports for network "${address.Alias}": ${own}`;
          for (const port of own) used.add(port);
        }
      }
    }
    if (typeof resources.MinDynamicPort === 'number' && resources.MinDynamicPort > 0)
      this.minDynamicPort = resources.MinDynamicPort;
    if (typeof resources.MaxDynamicPort === 'number' && resources.MaxDynamicPort > 0)
      this.maxDynamicPort = resources.MaxDynamicPort;
    const hostNetwork = nodeNetworks.find((network) => text(network.Mode) === 'host');
    if (nodeNetworks.length > 0) this.hostIP = text(objects(hostNetwork?.Addresses)[0]?.Address);
    else
      for (const network of objects(resources.Networks))
        if (text(network.Mode) === 'host') this.hostIP = text(network.IP);
    return '';
  }

  /** Nomad's `AddReserved` of a network resource: "" or why its ports collide. */
  private addNetwork(network: NetworkResource): string {
    const used = this.usedFor(network.IP);
    const reasons: string[] = [];
    for (const port of [...(network.ReservedPorts ?? []), ...(network.DynamicPorts ?? [])]) {
      if (port.Value < 0 || port.Value >= maxValidPort) return `invalid port ${port.Value}`;
      if (used.has(port.Value)) reasons.push(`port ${port.Value} already in use`);
      else used.add(port.Value);
    }
    return reasons.length > 0 ? `[${reasons.join(' ')}]` : '';
  }

  /** Nomad's `AddReservedPorts`: "" or why they collide. */
  addPorts(ports: Offer): string {
    const reasons: string[] = [];
    for (const port of ports) {
      if (port.Value < 0 || port.Value >= maxValidPort) return `[invalid port ${port.Value}]`;
      const used = this.usedFor(port.HostIP);
      if (used.has(port.Value)) reasons.push(`port ${port.Value} already in use`);
      else used.add(port.Value);
    }
    return reasons.length > 0 ? `[${reasons.join(' ')}]` : '';
  }

  /** Nomad's `AddAllocs`: "" or the last collision's reason. */
  addAlloc(alloc: { ID: string; AllocatedResources: AllocatedResources | null }): string {
    const resources = alloc.AllocatedResources;
    if (!resources) return '';
    let reason = '';
    const shared = resources.Shared;
    if (shared?.Ports && shared.Ports.length > 0) {
      const collision = this.addPorts(shared.Ports);
      if (collision) reason = `collision when reserving port for alloc ${alloc.ID}: ${collision}`;
      return reason;
    }
    for (const network of shared?.Networks ?? []) {
      const collision = this.addNetwork(network);
      if (collision)
        reason = `collision when reserving port for network ${network.IP} in alloc ${alloc.ID}: ${collision}`;
    }
    for (const [task, taskResources] of Object.entries(resources.Tasks ?? {})) {
      const network = taskResources.Networks?.[0];
      if (!network) continue;
      const collision = this.addNetwork(network);
      if (collision)
        reason = `collision when reserving port for network ${network.IP} in task ${task} of alloc ${alloc.ID}: ${collision}`;
    }
    return reason;
  }

  /** Whether `port` is in use, asked statically (on `hostNetwork`), or already offered. */
  private static taken(
    port: number,
    used: Set<number> | undefined,
    offered: readonly number[],
    reserved: readonly PortAsk[],
    hostNetwork: string,
  ): boolean {
    if (used?.has(port)) return true;
    for (const each of reserved) if (each.Value === port && each.HostNetwork === hostNetwork) return true;
    return offered.includes(port);
  }

  /** Nomad's `getDynamicPortsStochastic`, then `getDynamicPortsPrecise`: a free port of the range, or undefined. */
  private dynamicPort(
    used: Set<number> | undefined,
    offered: readonly number[],
    reserved: readonly PortAsk[],
    hostNetwork: string,
    random: Random,
  ): number | undefined {
    const min = this.minDynamicPort;
    const max = this.maxDynamicPort;
    for (let attempt = 0; attempt < maxRandomAttempts; attempt++) {
      const port = min + (max - min > 0 ? random.below(max - min) : 0);
      if (!NetworkIndex.taken(port, used, offered, reserved, hostNetwork)) return port;
    }
    const free: number[] = [];
    for (let port = min; port <= max; port++)
      if (!NetworkIndex.taken(port, used, offered, reserved, hostNetwork)) free.push(port);
    return free.length > 0 ? free[random.below(free.length)] : undefined;
  }

  /** Nomad's `AssignPorts` for a group network ask: the ports offered, or why none can be. */
  assignPorts(ask: NetworkAsk, random: Random): { offer: Offer } | { error: string } {
    const offer: Offer = [];
    const offered: number[] = [];
    for (const port of ask.ReservedPorts) {
      let granted: AllocatedPort | undefined;
      let error = '';
      for (const address of this.hostNetworks.get(port.HostNetwork) ?? []) {
        if (port.Value < 0 || port.Value >= maxValidPort) return { error: `invalid port ${port.Value} (out of range)` };
        if (this.used.get(address.Address)?.has(port.Value)) {
          error = `reserved port collision ${port.Label}=${port.Value}`;
          continue;
        }
        granted = { Label: port.Label, Value: port.Value, To: port.To, HostIP: address.Address };
        break;
      }
      if (!granted) return { error: error || `no addresses available for ${port.HostNetwork} network` };
      offer.push(granted);
      offered.push(granted.Value);
    }
    for (const port of ask.DynamicPorts) {
      let granted: AllocatedPort | undefined;
      let error = '';
      for (const address of this.hostNetworks.get(port.HostNetwork) ?? []) {
        const value = this.dynamicPort(
          this.used.get(address.Address),
          offered,
          ask.ReservedPorts,
          port.HostNetwork,
          random,
        );
        if (value === undefined) {
          error = 'dynamic port selection failed';
          continue;
        }
        granted = { Label: port.Label, Value: value, To: port.To === -1 ? value : port.To, HostIP: address.Address };
        break;
      }
      if (!granted) return { error: error || `no addresses available for ${port.HostNetwork} network` };
      offer.push(granted);
      offered.push(granted.Value);
    }
    return { offer };
  }
}

/** Nomad's `AllocatedPortsToNetworkResouce`: the ask as a granted network on `hostIP`, its dynamic ports filled in. */
export function networkResource(ask: NetworkAsk, offer: Offer, hostIP: string): NetworkResource {
  return {
    Mode: ask.Mode,
    Device: '',
    CIDR: '',
    IP: hostIP,
    MBits: 0,
    DNS: null,
    ReservedPorts: ask.ReservedPorts.length > 0 ? ask.ReservedPorts.map((port) => ({ ...port })) : null,
    DynamicPorts:
      ask.DynamicPorts.length > 0
        ? ask.DynamicPorts.map((port) => {
            const granted = offer.find((each) => each.Label === port.Label);
            return granted ? { ...port, Value: granted.Value, To: granted.To } : { ...port };
          })
        : null,
  };
}

/** Nomad's `NetworkChecker.hasNetwork`: the node has a network of the ask's mode (`none` needs none). */
export function hasNetworkMode(node: ClusterNode, mode: string): boolean {
  if (mode === 'none') return true;
  if (!node.NodeResources) return false;
  return objects((node.NodeResources as Loose).Networks).some((network) => (text(network.Mode) || 'host') === mode);
}

/** Nomad's `NetworkChecker.hasHostNetworks`: "" or why the node lacks a host network a port names. */
export function missingHostNetwork(node: ClusterNode, ask: NetworkAsk): string {
  const aliases = new Set(
    objects((node.NodeResources as Loose | null)?.NodeNetworks).flatMap((network) =>
      objects(network.Addresses).map((address) => text(address.Alias)),
    ),
  );
  for (const port of [...ask.DynamicPorts, ...ask.ReservedPorts])
    if (!aliases.has(port.HostNetwork)) return `missing host network "${port.HostNetwork}" for port "${port.Label}"`;
  return '';
}
