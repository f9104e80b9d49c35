/**
 * Everything the agent learns about its machine, once at start (Nomad re-runs its periodic fingerprinters; the
 * storage figures are read again before each registration): CPU, memory, the data directory's disk, the host and the
 * network, as Nomad's fingerprinters name them in a node's `Attributes`.
 */
import { type CpuFingerprint, fingerprintCpu } from './cpu.ts';
import { fingerprintHost, type HostFingerprint } from './host.ts';
import { fingerprintMemory, type MemoryFingerprint } from './memory.ts';
import { fingerprintNetwork, type NetworkFingerprint } from './network.ts';
import { fingerprintStorage, type StorageFingerprint } from './storage.ts';

export interface MachineFingerprint {
  cpu: CpuFingerprint;
  memory: MemoryFingerprint;
  storage: StorageFingerprint;
  host: HostFingerprint;
  network: NetworkFingerprint;
}

export function fingerprintMachine(options: { dataDir: string; networkInterface?: string }): MachineFingerprint {
  return {
    cpu: fingerprintCpu(),
    memory: fingerprintMemory(),
    storage: fingerprintStorage(options.dataDir),
    host: fingerprintHost(),
    network: fingerprintNetwork(options.networkInterface),
  };
}

/** The fingerprint as Nomad's attribute names and values (strings, as Nomad's `Node.Attributes`). */
export function machineAttributes(machine: MachineFingerprint): Record<string, string> {
  const { cpu, memory, storage, host, network } = machine;
  return {
    'cpu.arch': cpu.arch,
    'cpu.numcores': String(cpu.cores),
    'cpu.reservablecores': String(cpu.cores),
    'cpu.frequency': String(cpu.mhz),
    'cpu.totalcompute': String(cpu.totalCompute),
    'cpu.usablecompute': String(cpu.totalCompute),
    'cpu.modelname': cpu.model,
    'memory.totalbytes': String(memory.totalBytes),
    'unique.storage.volume': storage.volume,
    'unique.storage.bytestotal': String(storage.bytesTotal),
    'unique.storage.bytesfree': String(storage.bytesFree),
    'kernel.name': host.kernelName,
    'kernel.arch': host.kernelArch,
    'kernel.version': host.kernelVersion,
    'os.name': host.osName,
    'os.version': host.osVersion,
    'os.signals': host.signals.join(','),
    'unique.hostname': host.hostname,
    'unique.network.ip-address': network.ip,
  };
}
