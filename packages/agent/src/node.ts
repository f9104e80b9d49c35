/**
 * The node the agent registers: Nomad's `structs.Node` as the client protocol carries it, built from the machine's
 * fingerprint, the detected drivers and the agent's settings. Nomad's defaults where the operator sets nothing: the
 * node is named after its host, in datacenter `dc1` and pool `default`, with dynamic ports 20000–32000.
 */
import { type DriverInfo, driverAttributes } from './drivers.ts';
import { type MachineFingerprint, machineAttributes } from './fingerprint/index.ts';
import { agentRevision, nomadVersion } from './version.ts';

/** A node event as the agent sends it (Nomad's `NodeEvent`). */
export interface NodeEvent {
  Message: string;
  Subsystem: string;
  Details: Record<string, string>;
  /** RFC 3339. */
  Timestamp: string;
}

export interface ClientNode {
  ID: string;
  SecretID: string;
  Name: string;
  Datacenter: string;
  NodePool: string;
  NodeClass: string;
  HTTPAddr: string;
  TLSEnabled: boolean;
  Attributes: Record<string, string>;
  NodeResources: {
    Cpu: { CpuShares: number; TotalCpuCores: number; ReservableCpuCores: number[] };
    Memory: { MemoryMB: number };
    Disk: { DiskMB: number };
    Networks: Array<{ Mode: string; Device: string; CIDR: string; IP: string; MBits: number }>;
    NodeNetworks: Array<{
      Mode: string;
      Device: string;
      MacAddress: string;
      Speed: number;
      Addresses: Array<{ Family: string; Alias: string; Address: string; ReservedPorts: string; Gateway: string }>;
    }>;
    Devices: unknown[];
    MinDynamicPort: number;
    MaxDynamicPort: number;
  };
  ReservedResources: {
    Cpu: { CpuShares: number };
    Memory: { MemoryMB: number };
    Disk: { DiskMB: number };
    Networks: { ReservedHostPorts: string };
  };
  Drivers: Record<string, DriverInfo>;
  Meta: Record<string, string>;
  Links: Record<string, string>;
}

/** What the operator sets about the node (Nomad's agent flags and `client` block). */
export interface NodeSettings {
  name?: string;
  datacenter: string;
  nodePool: string;
  nodeClass: string;
  meta: Record<string, string>;
  /** The port the agent would advertise its HTTP API on (Nomad's 4646): `HTTPAddr` and `nomad.advertise.address`. */
  httpPort: number;
}

const mib = 1024 * 1024;
/** Nomad's default speed for an interface whose speed it cannot read. */
const defaultMbits = 1000;

export function buildNode(
  identity: { id: string; secretId: string },
  settings: NodeSettings,
  machine: MachineFingerprint,
  drivers: Record<string, DriverInfo>,
): ClientNode {
  const httpAddr = `${machine.network.ip}:${settings.httpPort}`;
  return {
    ID: identity.id,
    SecretID: identity.secretId,
    Name: settings.name || machine.host.hostname,
    Datacenter: settings.datacenter,
    NodePool: settings.nodePool,
    NodeClass: settings.nodeClass,
    HTTPAddr: httpAddr,
    TLSEnabled: false,
    Attributes: {
      ...machineAttributes(machine),
      'nomad.version': nomadVersion,
      'nomad.revision': agentRevision,
      'nomad.advertise.address': httpAddr,
      'nomad.service_discovery': 'true',
      ...driverAttributes(drivers),
    },
    NodeResources: {
      Cpu: {
        CpuShares: machine.cpu.totalCompute,
        TotalCpuCores: machine.cpu.cores,
        ReservableCpuCores: Array.from({ length: machine.cpu.cores }, (_, core) => core),
      },
      Memory: { MemoryMB: Math.floor(machine.memory.totalBytes / mib) },
      Disk: { DiskMB: Math.floor(machine.storage.bytesFree / mib) },
      Networks: [
        {
          Mode: 'host',
          Device: machine.network.device,
          CIDR: machine.network.cidr,
          IP: machine.network.ip,
          MBits: defaultMbits,
        },
      ],
      NodeNetworks: [
        {
          Mode: 'host',
          Device: machine.network.device,
          MacAddress: machine.network.mac,
          Speed: defaultMbits,
          Addresses: [
            { Family: 'ipv4', Alias: 'default', Address: machine.network.ip, ReservedPorts: '', Gateway: '' },
          ],
        },
      ],
      Devices: [],
      MinDynamicPort: 20_000,
      MaxDynamicPort: 32_000,
    },
    ReservedResources: {
      Cpu: { CpuShares: 0 },
      Memory: { MemoryMB: 0 },
      Disk: { DiskMB: 0 },
      Networks: { ReservedHostPorts: '' },
    },
    Drivers: drivers,
    Meta: { ...settings.meta },
    Links: {},
  };
}

export function nodeEvent(message: string, subsystem: string, details: Record<string, string>, now: Date): NodeEvent {
  return { Message: message, Subsystem: subsystem, Details: details, Timestamp: now.toISOString() };
}
