/**
 * Simulated machines, deterministic from a seed: the same seed and position give the same node (ID, SecretID, name,
 * hardware, OS, address) on every run, so a fleet started again is the same nodes, and a bench is repeatable. The
 * node itself is built by the agent's own `buildNode` from a made-up fingerprint, so a simulated node has exactly
 * the shape a real agent sends. The SecretIDs are as predictable as the seed: for simulations only.
 */
import type { DriverInfo } from '../drivers.ts';
import { fingerprintDrivers } from '../drivers.ts';
import type { MachineFingerprint } from '../fingerprint/index.ts';
import { buildNode, type ClientNode } from '../node.ts';

/** mulberry32: a small, fast 32-bit generator, good enough to vary simulated hardware (not for secrets). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A version-4-shaped UUID from the generator. */
function seededUuid(random: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16));
  hex[12] = '4';
  hex[16] = (8 + Math.floor(random() * 4)).toString(16);
  const text = hex.join('');
  return `${text.slice(0, 8)}-${text.slice(8, 12)}-${text.slice(12, 16)}-${text.slice(16, 20)}-${text.slice(20)}`;
}

const pick = <T>(random: () => number, list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;

const shapes = [
  { cores: 2, memoryGiB: 4 },
  { cores: 4, memoryGiB: 16 },
  { cores: 8, memoryGiB: 32 },
  { cores: 16, memoryGiB: 64 },
  { cores: 32, memoryGiB: 128 },
  { cores: 64, memoryGiB: 256 },
] as const;
const systems = [
  { name: 'debian', version: '12.11', kernel: '6.1.0-37-amd64' },
  { name: 'ubuntu', version: '24.04', kernel: '6.8.0-60-generic' },
  { name: 'ubuntu', version: '22.04', kernel: '5.15.0-141-generic' },
  { name: 'rhel', version: '9.5', kernel: '5.14.0-503.el9.x86_64' },
] as const;
const models = ['AMD EPYC 7R13 Processor', 'Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz', 'AMD EPYC 9R14'] as const;

export interface SeededNodeOptions {
  seed: number;
  /** Datacenters the nodes spread over (default dc1, dc2, dc3). */
  datacenters?: readonly string[];
  nodePool?: string;
}

/** The `position`th node of the seeded fleet. */
export function seededNode(position: number, options: SeededNodeOptions): ClientNode {
  const random = seededRandom((options.seed * 1_000_003 + position) >>> 0);
  const id = seededUuid(random);
  const secretId = seededUuid(random);
  const shape = pick(random, shapes);
  const system = pick(random, systems);
  const mhz = 2000 + Math.floor(random() * 16) * 100;
  const diskGiB = 50 + Math.floor(random() * 20) * 50;
  const ip = `10.${(position >> 16) & 255}.${(position >> 8) & 255}.${position & 255}`;
  const hostname = `sim-${options.seed}-${position}`;
  const machine: MachineFingerprint = {
    cpu: { cores: shape.cores, mhz, totalCompute: shape.cores * mhz, model: pick(random, models), arch: 'amd64' },
    memory: { totalBytes: shape.memoryGiB * 1024 ** 3 },
    storage: {
      volume: '/dev/nvme0n1p1',
      bytesTotal: diskGiB * 1024 ** 3,
      bytesFree: Math.floor(diskGiB * 1024 ** 3 * (0.3 + random() * 0.6)),
    },
    host: {
      osName: system.name,
      osVersion: system.version,
      kernelName: 'linux',
      kernelArch: 'x86_64',
      kernelVersion: system.kernel,
      hostname,
      signals: ['SIGHUP', 'SIGINT', 'SIGKILL', 'SIGTERM', 'SIGUSR1', 'SIGUSR2'],
    },
    network: { device: 'eth0', ip, cidr: `${ip}/32`, mac: '' },
  };
  const drivers: Record<string, DriverInfo> = fingerprintDrivers(
    { rawExecEnabled: random() < 0.9 },
    new Date(Date.UTC(2026, 0, 1)),
  );
  return buildNode(
    { id, secretId },
    {
      datacenter: pick(random, options.datacenters ?? ['dc1', 'dc2', 'dc3']),
      nodePool: options.nodePool ?? 'default',
      nodeClass: pick(random, ['', 'general', 'compute', 'storage']),
      meta: { rack: `r${Math.floor(random() * 40)}`, fleet: `seed-${options.seed}` },
      httpPort: 4646,
      name: hostname,
    },
    machine,
    drivers,
  );
}
