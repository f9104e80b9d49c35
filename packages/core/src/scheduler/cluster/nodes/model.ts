/**
 * A cluster node, as Nomad's `structs.Node` reads over its HTTP API: what a client registers (`clientNodeBody`), what
 * the service keeps and adds (status, eligibility, drain, events, indexes), the list stub, and the events a node
 * change publishes (topic `Node`, Key the node ID, payload `{"Node": …}` with `SecretID` empty, no namespace).
 */
import { createHash } from 'node:crypto';
import * as z from 'zod/mini';
import { badRequest } from '../../../lib/errors.ts';
import type { PendingEvent } from '../../state.ts';

export type NodeStatus = 'initializing' | 'ready' | 'down' | 'disconnected';
export type Eligibility = 'eligible' | 'ineligible';

/** A node event (Nomad's `NodeEvent`): what happened to the node, kept on it (the last 10). */
export interface NodeEvent {
  Message: string;
  Subsystem: string;
  Details: Record<string, string> | null;
  Timestamp: string;
  CreateIndex: number;
}

export interface DrainStrategy {
  /** Nanoseconds after `StartedAt` when what is left is stopped; 0 none, negative force (Nomad's `-force`: -1s). */
  Deadline: number;
  IgnoreSystemJobs: boolean;
  /** RFC 3339; Go's zero time when there is no deadline. */
  ForceDeadline: string;
  StartedAt: string;
}

export interface DrainMetadata {
  StartedAt: string;
  UpdatedAt: string;
  Status: 'draining' | 'complete' | 'canceled';
  AccessorID: string;
  Meta: Record<string, string> | null;
}

/** The node as stored and read (its `SecretID` is never stored here: see the node's beat item in `store.ts`). */
export interface ClusterNode {
  ID: string;
  SecretID: string;
  Datacenter: string;
  Name: string;
  HTTPAddr: string;
  TLSEnabled: boolean;
  Attributes: Record<string, string>;
  NodeResources: Record<string, unknown> | null;
  ReservedResources: Record<string, unknown> | null;
  Resources: null;
  Reserved: null;
  Links: Record<string, string> | null;
  Meta: Record<string, string> | null;
  NodeClass: string;
  NodePool: string;
  CgroupParent: string;
  ComputedClass: string;
  DrainStrategy: DrainStrategy | null;
  SchedulingEligibility: Eligibility;
  Status: NodeStatus;
  StatusDescription: string;
  StatusUpdatedAt: number;
  Events: NodeEvent[];
  Drivers: Record<string, unknown> | null;
  CSIControllerPlugins: Record<string, unknown> | null;
  CSINodePlugins: Record<string, unknown> | null;
  HostVolumes: Record<string, unknown> | null;
  HostNetworks: Record<string, unknown> | null;
  LastDrain: DrainMetadata | null;
  LastMissedHeartbeatIndex: number;
  LastAllocUpdateIndex: number;
  CreateIndex: number;
  ModifyIndex: number;
}

/** Nomad's `MaxRetainedNodeEvents`. */
export const maxNodeEvents = 10;
/** Go's zero `time.Time`, as Nomad prints an unset one. */
export const zeroTime = '0001-01-01T00:00:00Z';

/** The node event messages Nomad's servers write. */
export const nodeMessages = {
  registered: 'Node registered',
  heartbeatMissed: 'Node heartbeat missed',
  reregisteredByHeartbeat: 'Node reregistered by heartbeat',
  drainSet: 'Node drain strategy set',
  drainUpdated: 'Node drain strategy updated',
  drainDisabled: 'Node drain disabled',
  eligible: 'Node marked as eligible for scheduling',
  ineligible: 'Node marked as ineligible for scheduling',
} as const;

export const validUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Nomad's `validNodePoolName`. */
export const validPoolName = /^[a-zA-Z0-9-_]{1,128}$/;

/** Limits that keep a node one DynamoDB item (400 KB) with room for its events. */
export const nodeLimits = {
  mapEntries: 1024,
  links: 64,
  keyLength: 256,
  valueLength: 4096,
  nodeJsonBytes: 256 * 1024,
  eventMessage: 1024,
  eventDetails: 32,
  eventsPerCall: 10,
  nameLength: 256,
};

const text = (description: string) => z.optional(z.string()).check(z.describe(description));
const integer = (description: string) => z.optional(z.number().check(z.int())).check(z.describe(description));
const stringMap = (description: string) =>
  z.optional(z.nullable(z.record(z.string(), z.string()))).check(z.describe(description));
const looseObjects = (description: string) =>
  z.optional(z.nullable(z.array(z.record(z.string(), z.unknown())))).check(z.describe(description));
const looseMap = (description: string) =>
  z.optional(z.nullable(z.record(z.string(), z.unknown()))).check(z.describe(description));

const nodeResources = z.object({
  Cpu: z
    .optional(
      z.object({
        CpuShares: integer('Total CPU in MHz (cores × MHz).'),
        TotalCpuCores: integer('The number of cores.'),
        ReservableCpuCores: z
          .optional(z.nullable(z.array(z.number().check(z.int()))))
          .check(z.describe('The cores tasks may reserve.')),
      }),
    )
    .check(z.describe('CPU.')),
  Memory: z.optional(z.object({ MemoryMB: integer('Memory in MB.') })).check(z.describe('Memory.')),
  Disk: z.optional(z.object({ DiskMB: integer('Disk space of the data directory in MB.') })).check(z.describe('Disk.')),
  Networks: looseObjects('Network resources (Nomad `NetworkResource`s).'),
  NodeNetworks: looseObjects('Node networks (Nomad `NodeNetworkResource`s).'),
  Devices: looseObjects('Device groups (Nomad `NodeDeviceResource`s).'),
  MinDynamicPort: integer('Lowest dynamic port.'),
  MaxDynamicPort: integer('Highest dynamic port.'),
});

const reservedResources = z.object({
  Cpu: z.optional(z.object({ CpuShares: integer('Reserved CPU in MHz.') })).check(z.describe('Reserved CPU.')),
  Memory: z.optional(z.object({ MemoryMB: integer('Reserved memory in MB.') })).check(z.describe('Reserved memory.')),
  Disk: z.optional(z.object({ DiskMB: integer('Reserved disk in MB.') })).check(z.describe('Reserved disk.')),
  Networks: z
    .optional(z.object({ ReservedHostPorts: text('Reserved host ports, e.g. `22,80,8000-8100`.') }))
    .check(z.describe('Reserved ports.')),
});

const driverInfo = z.object({
  Detected: z.optional(z.boolean()).check(z.describe('Whether the driver was found.')),
  Healthy: z.optional(z.boolean()).check(z.describe('Whether it is healthy.')),
  HealthDescription: text('Why (un)healthy.'),
  UpdateTime: text('When its health was last checked (RFC 3339).'),
  Attributes: stringMap('The driver’s attributes.'),
});

/** The `Node` a client registers (Nomad's `structs.Node` fields a client sets; the rest are the service's). */
export const clientNodeBody = z.object({
  ID: text('The node ID: a UUID the agent generates once and keeps.'),
  SecretID: text('The node secret: a UUID the agent generates once and keeps; never shown again.'),
  Datacenter: text('The datacenter.'),
  Name: text('The node name.'),
  HTTPAddr: text('The address of the agent’s HTTP API (`host:port`).'),
  TLSEnabled: z.optional(z.boolean()).check(z.describe('Whether the agent’s HTTP API uses TLS.')),
  Attributes: stringMap('Fingerprinted attributes (`kernel.name`, `cpu.arch`, `unique.hostname`, …).'),
  NodeResources: z.optional(z.nullable(nodeResources)).check(z.describe('What the node offers.')),
  ReservedResources: z.optional(z.nullable(reservedResources)).check(z.describe('What is kept for the node itself.')),
  Links: stringMap('Links to the node in other systems.'),
  Meta: stringMap('Operator metadata.'),
  NodeClass: text('The node class.'),
  NodePool: text('The node pool (default `default`), created if missing.'),
  CgroupParent: text('The cgroup parent of tasks.'),
  Drivers: z
    .optional(z.nullable(z.record(z.string(), driverInfo)))
    .check(z.describe('The task drivers found, by name.')),
  CSIControllerPlugins: looseMap('CSI controller plugins by ID.'),
  CSINodePlugins: looseMap('CSI node plugins by ID.'),
  HostVolumes: looseMap('Host volumes by name.'),
  HostNetworks: looseMap('Host networks by name.'),
  Status: text('Ignored: a registering client cannot set its status.'),
});
export type ClientNode = z.output<typeof clientNodeBody>;

/** A node event a client sends (`Node.EmitEvents`, or with a heartbeat). */
export const clientEventBody = z.object({
  Message: z.string().check(z.describe('What happened.')),
  Subsystem: z.optional(z.string()).check(z.describe('Where: `Cluster`, `Driver`, `Heartbeat`, …')),
  Details: z.optional(z.nullable(z.record(z.string(), z.string()))).check(z.describe('Details, by name.')),
  Timestamp: z.optional(z.string()).check(z.describe('When (RFC 3339); the server’s time when absent.')),
});
export type ClientEvent = z.output<typeof clientEventBody>;

/** Refuses what Nomad's `NodeRegisterRequest.Validate` refuses, and what would not fit one item, naming it. */
export function validateClientNode(node: ClientNode): void {
  if (!node.ID) throw badRequest('missing node ID for client registration');
  if (!validUuid.test(node.ID)) throw badRequest(`invalid node ID "${shown(node.ID)}": must be a lower-case UUID`);
  if (!node.Datacenter) throw badRequest('missing datacenter for client registration');
  if (!node.Name) throw badRequest('missing node name for client registration');
  if (!node.Attributes || Object.keys(node.Attributes).length === 0)
    throw badRequest('missing attributes for client registration');
  if (!node.SecretID) throw badRequest('missing node secret ID for client registration');
  if (!validUuid.test(node.SecretID)) throw badRequest('invalid node secret ID: must be a lower-case UUID');
  if (node.NodePool && !validPoolName.test(node.NodePool))
    throw badRequest(
      `invalid node pool: invalid name "${shown(node.NodePool)}": 1 to 128 letters, digits, dashes and underscores`,
    );
  if (node.NodePool === 'all') throw badRequest('node is not allowed to register in node pool "all"');
  for (const [field, value] of [
    ['Name', node.Name],
    ['Datacenter', node.Datacenter],
    ['NodeClass', node.NodeClass ?? ''],
    ['HTTPAddr', node.HTTPAddr ?? ''],
  ] as const) {
    if (value.length > nodeLimits.nameLength)
      throw badRequest(`Node.${field} is longer than ${nodeLimits.nameLength} characters`);
  }
  checkMap('Attributes', node.Attributes, nodeLimits.mapEntries);
  checkMap('Meta', node.Meta ?? {}, nodeLimits.mapEntries);
  checkMap('Links', node.Links ?? {}, nodeLimits.links);
  const size = Buffer.byteLength(JSON.stringify(node));
  if (size > nodeLimits.nodeJsonBytes)
    throw badRequest(`Node is ${size} bytes of JSON; at most ${nodeLimits.nodeJsonBytes} are accepted`);
}

function checkMap(field: string, map: Record<string, string>, most: number): void {
  const keys = Object.keys(map);
  if (keys.length > most) throw badRequest(`Node.${field} has ${keys.length} entries; at most ${most} are accepted`);
  for (const key of keys) {
    if (key === '') throw badRequest(`Node.${field} has an empty key`);
    if (key.length > nodeLimits.keyLength)
      throw badRequest(`Node.${field} key "${shown(key)}" is longer than ${nodeLimits.keyLength} characters`);
    if ((map[key] as string).length > nodeLimits.valueLength)
      throw badRequest(`Node.${field}["${shown(key)}"] is longer than ${nodeLimits.valueLength} characters`);
  }
}

/** Refuses node events that would not fit, naming the problem. */
export function validateClientEvents(events: ClientEvent[]): void {
  if (events.length === 0) throw badRequest('no node events given');
  if (events.length > nodeLimits.eventsPerCall)
    throw badRequest(`${events.length} node events given; at most ${nodeLimits.eventsPerCall} per call`);
  for (const [index, event] of events.entries()) {
    if (event.Message === '') throw badRequest(`Events[${index}].Message is empty`);
    if (event.Message.length > nodeLimits.eventMessage)
      throw badRequest(`Events[${index}].Message is longer than ${nodeLimits.eventMessage} characters`);
    if ((event.Subsystem ?? '').length > nodeLimits.nameLength)
      throw badRequest(`Events[${index}].Subsystem is longer than ${nodeLimits.nameLength} characters`);
    const details = Object.entries(event.Details ?? {});
    if (details.length > nodeLimits.eventDetails)
      throw badRequest(`Events[${index}].Details has ${details.length} entries; at most ${nodeLimits.eventDetails}`);
    for (const [key, value] of details) {
      if (key.length > nodeLimits.keyLength || value.length > nodeLimits.eventMessage)
        throw badRequest(`Events[${index}].Details["${shown(key)}"] is too long`);
    }
    if (event.Timestamp !== undefined && Number.isNaN(Date.parse(event.Timestamp)))
      throw badRequest(`Events[${index}].Timestamp "${shown(event.Timestamp)}" is not an RFC 3339 time`);
  }
}

/** A value as an error message may quote it. */
export function shown(value: string): string {
  return value.length <= 64 ? value : `${value.slice(0, 64)}… (${value.length} characters)`;
}

/** A node event as stored, stamped with the write's index. */
export function nodeEvent(
  message: string,
  subsystem: string,
  at: number,
  index: number,
  details: Record<string, string> | null = null,
): NodeEvent {
  return {
    Message: message,
    Subsystem: subsystem,
    Details: details,
    Timestamp: new Date(at).toISOString(),
    CreateIndex: index,
  };
}

/** The node's events with `added` appended, keeping the last `maxNodeEvents` (Nomad's `appendNodeEvents`). */
export const appendEvents = (node: ClusterNode, added: NodeEvent[]): NodeEvent[] =>
  [...node.Events, ...added].slice(-maxNodeEvents);

/**
 * The node's computed class: a digest of what makes nodes interchangeable for placement (datacenter, pool, class,
 * attributes except the `unique.` ones, resources, drivers and meta), as Nomad's `ComputeClass` (`v1:<hash>`; the
 * hash function differs from Nomad's, the meaning is the same).
 */
export function computedClass(node: Omit<ClusterNode, 'ComputedClass'>): string {
  const attributes = Object.fromEntries(
    Object.entries(node.Attributes)
      .filter(([key]) => !key.startsWith('unique.'))
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
  const meta = Object.fromEntries(
    Object.entries(node.Meta ?? {})
      .filter(([key]) => !key.startsWith('unique.'))
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
  const digest = createHash('sha256')
    .update(
      JSON.stringify([
        node.Datacenter,
        node.NodePool,
        node.NodeClass,
        attributes,
        meta,
        Object.keys(node.Drivers ?? {}).sort(),
      ]),
    )
    .digest();
  return `v1:${digest.readBigUInt64BE(0)}`;
}

/** The node as a client registered it, on top of what the service keeps of an earlier registration. */
export function registeredNode(
  input: ClientNode,
  existing: ClusterNode | undefined,
  index: number,
  now: number,
): ClusterNode {
  const base: Omit<ClusterNode, 'ComputedClass'> = {
    ID: input.ID as string,
    SecretID: '',
    Datacenter: input.Datacenter as string,
    Name: input.Name as string,
    HTTPAddr: input.HTTPAddr ?? '',
    TLSEnabled: input.TLSEnabled ?? false,
    Attributes: input.Attributes ?? {},
    NodeResources: (input.NodeResources as Record<string, unknown> | null | undefined) ?? null,
    ReservedResources: (input.ReservedResources as Record<string, unknown> | null | undefined) ?? null,
    Resources: null,
    Reserved: null,
    Links: input.Links ?? null,
    Meta: input.Meta ?? null,
    NodeClass: input.NodeClass ?? '',
    NodePool: input.NodePool || 'default',
    CgroupParent: input.CgroupParent ?? '',
    DrainStrategy: existing?.DrainStrategy ?? null,
    SchedulingEligibility: existing?.SchedulingEligibility ?? 'eligible',
    Status: existing?.Status ?? 'initializing',
    StatusDescription: existing?.StatusDescription ?? '',
    StatusUpdatedAt: Math.floor(now / 1000),
    Events: existing ? existing.Events : [nodeEvent(nodeMessages.registered, 'Cluster', now, index)],
    Drivers: (input.Drivers as Record<string, unknown> | null | undefined) ?? null,
    CSIControllerPlugins: input.CSIControllerPlugins ?? null,
    CSINodePlugins: input.CSINodePlugins ?? null,
    HostVolumes: input.HostVolumes ?? null,
    HostNetworks: input.HostNetworks ?? null,
    LastDrain: existing?.LastDrain ?? null,
    LastMissedHeartbeatIndex: existing?.LastMissedHeartbeatIndex ?? 0,
    LastAllocUpdateIndex: existing?.LastAllocUpdateIndex ?? 0,
    CreateIndex: existing?.CreateIndex ?? index,
    ModifyIndex: index,
  };
  return { ...base, ComputedClass: computedClass(base) };
}

/** Nomad's `NodeListStub`; `os` adds `Attributes` with `os.name`, `resources` the node's resources. */
export function nodeStub(
  node: ClusterNode,
  fields: { os?: boolean; resources?: boolean } = {},
): Record<string, unknown> & { ID: string } {
  const address = hostOf(node.HTTPAddr);
  return {
    Address: address,
    ID: node.ID,
    ...(fields.os ? { Attributes: { 'os.name': node.Attributes['os.name'] ?? '' } } : {}),
    Datacenter: node.Datacenter,
    Name: node.Name,
    NodeClass: node.NodeClass,
    NodePool: node.NodePool,
    Version: node.Attributes['nomad.version'] ?? '',
    Drain: node.DrainStrategy !== null,
    SchedulingEligibility: node.SchedulingEligibility,
    Status: node.Status,
    StatusDescription: node.StatusDescription,
    Drivers: node.Drivers,
    HostVolumes: node.HostVolumes,
    ...(fields.resources ? { NodeResources: node.NodeResources, ReservedResources: node.ReservedResources } : {}),
    LastDrain: node.LastDrain,
    CreateIndex: node.CreateIndex,
    ModifyIndex: node.ModifyIndex,
  };
}

/** Go's `net.SplitHostPort` host, or "" when the address has no port. */
function hostOf(address: string): string {
  const bracketed = /^\[([^\]]*)\]:[^:]*$/.exec(address);
  if (bracketed) return bracketed[1] as string;
  const colon = address.lastIndexOf(':');
  if (colon < 0 || address.indexOf(':') !== colon) return '';
  return address.slice(0, colon);
}

/**
 * The node as any read, event or log shows it: `SecretID` always empty, and `Drain` (the reference's boolean, which
 * Nomad's older API had beside `DrainStrategy`) true while a drain strategy is set.
 */
export const sanitized = (node: ClusterNode): ClusterNode & { Drain: boolean } => ({
  ...node,
  SecretID: '',
  Drain: node.DrainStrategy !== null,
});

/** A `Node` topic event (Nomad's `nodes` table: Key the ID, no filter keys, no namespace). */
export const nodeTopicEvent = (type: string, node: ClusterNode): PendingEvent => ({
  Topic: 'Node',
  Type: type,
  Key: node.ID,
  Namespace: '',
  FilterKeys: null,
  Payload: { Node: sanitized(node) },
});
