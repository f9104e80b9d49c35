import { randomUUID } from 'node:crypto';
import type { SchedulerService } from './scheduler-harness.ts';

/** A node as a client agent registers it (Nomad `structs.Node` fields), with `overrides` on top. */
export function clientNode(overrides: Record<string, unknown> = {}): Record<string, unknown> & {
  ID: string;
  SecretID: string;
  Name: string;
} {
  const id = randomUUID();
  return {
    ID: id,
    SecretID: randomUUID(),
    Name: `node-${id.slice(0, 8)}`,
    Datacenter: 'dc1',
    HTTPAddr: '10.0.0.7:4646',
    TLSEnabled: false,
    Attributes: {
      'kernel.name': 'linux',
      'os.name': 'debian',
      'cpu.arch': 'amd64',
      'unique.hostname': `host-${id.slice(0, 8)}`,
      'nomad.version': '1.11.0',
    },
    NodeResources: {
      Cpu: { CpuShares: 4000, TotalCpuCores: 2, ReservableCpuCores: [0, 1] },
      Memory: { MemoryMB: 4096 },
      Disk: { DiskMB: 20_000 },
      Networks: [],
      NodeNetworks: [],
      Devices: [],
      MinDynamicPort: 20_000,
      MaxDynamicPort: 32_000,
    },
    ReservedResources: { Cpu: { CpuShares: 100 }, Memory: { MemoryMB: 256 }, Disk: { DiskMB: 0 }, Networks: {} },
    Drivers: {
      raw_exec: { Detected: true, Healthy: true, HealthDescription: 'Healthy', UpdateTime: '2026-01-01T00:00:00Z' },
    },
    Meta: { rack: 'r1' },
    NodeClass: '',
    ...overrides,
  } as Record<string, unknown> & { ID: string; SecretID: string; Name: string };
}

/**
 * A client's resources as `clientNode` registers them, with one host network (`eth0`, 10.0.0.7, address alias
 * `default`): a node that can take jobs asking for ports.
 */
export function hostNetworkResources(): Record<string, unknown> {
  return {
    ...(clientNode().NodeResources as Record<string, unknown>),
    Networks: [{ Mode: 'host', Device: 'eth0', CIDR: '10.0.0.7/32', IP: '10.0.0.7', MBits: 1000 }],
    NodeNetworks: [
      {
        Mode: 'host',
        Device: 'eth0',
        Speed: 1000,
        Addresses: [{ Family: 'ipv4', Alias: 'default', Address: '10.0.0.7', ReservedPorts: '', Gateway: '' }],
      },
    ],
  };
}

/** A client's resources as `clientNode` registers them, with two healthy NVIDIA T4 GPUs (`GPU-1`, `GPU-2`). */
export function gpuResources(): Record<string, unknown> {
  return {
    ...(clientNode().NodeResources as Record<string, unknown>),
    Devices: [
      {
        Vendor: 'nvidia',
        Type: 'gpu',
        Name: 't4',
        Instances: [
          { ID: 'GPU-1', Healthy: true },
          { ID: 'GPU-2', Healthy: true },
        ],
      },
    ],
  };
}

/** The management token, and client tokens with `node { policy = "read" }` and `node { policy = "write" }`. */
export async function nodeTokens(h: SchedulerService): Promise<{ root: string; reader: string; writer: string }> {
  const root = await h.bootstrap();
  const token = async (name: string, rules: string) => {
    await h.call('POST', `/v1/acl/policy/${name}`, { token: root, body: { Rules: rules } });
    return (await h.call('POST', '/v1/acl/token', { token: root, body: { Type: 'client', Policies: [name] } })).body
      .SecretID as string;
  };
  return {
    root,
    reader: await token('node-read', 'node { policy = "read" }'),
    writer: await token('node-write', 'node { policy = "write" }'),
  };
}

/** An introduction token minted with `writer` (node:write). */
export async function introduction(
  h: SchedulerService,
  writer: string,
  body: Record<string, unknown> = {},
): Promise<string> {
  const out = await h.call('PUT', '/v1/acl/identity/client-introduction-token', { token: writer, body });
  if (out.status !== 200) throw new Error(`introduction token refused: ${out.status} ${out.text}`);
  return out.body.JWT as string;
}

/** Registers a new node with a fresh introduction token; the node, and the registration's answer. */
export async function registerNode(h: SchedulerService, writer: string, overrides: Record<string, unknown> = {}) {
  const node = clientNode(overrides);
  const token = await introduction(h, writer, { NodePool: node.NodePool ?? 'default' });
  const out = await h.call('POST', '/v1/client/register', { token, body: { Node: node } });
  if (out.status !== 200) throw new Error(`registration refused: ${out.status} ${out.text}`);
  return { node, answer: out.body, identity: out.body.SignedIdentity as string };
}

/** The claims of a JWT (not verified: the test reads what the service signed). */
export const claimsOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString()) as Record<string, unknown>;
