/**
 * The CPU, as Nomad's `cpu` and `arch` fingerprinters report it: the logical cores, their frequency in MHz (the
 * maximum the kernel's cpufreq reports, else `/proc/cpuinfo`'s `cpu MHz`, else what Node reads), the model, and the
 * compute they add up to (cores × MHz, Nomad's `cpu.totalcompute`, which becomes the node's `CpuShares`).
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface CpuFingerprint {
  cores: number;
  mhz: number;
  totalCompute: number;
  model: string;
  /** Go's `runtime.GOARCH` for Node's `os.arch()`: Nomad's `cpu.arch`. */
  arch: string;
}

/** Node's architecture names as Go's. */
const goArch: Record<string, string> = {
  x64: 'amd64',
  ia32: '386',
  arm64: 'arm64',
  arm: 'arm',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
  mips: 'mips',
  mipsel: 'mipsle',
};

export function goArchitecture(nodeArch = os.arch()): string {
  return goArch[nodeArch] ?? nodeArch;
}

const readText = (file: string) => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
};

/** `cpu MHz` and `model name` of each processor in a `/proc/cpuinfo` text. */
export function parseCpuinfo(text: string): { mhz: number[]; models: string[] } {
  const mhz: number[] = [];
  const models: string[] = [];
  for (const line of text.split('\n')) {
    const [name, value] = line.split(':').map((part) => part.trim());
    if (name === 'cpu MHz' && value) mhz.push(Number(value));
    if (name === 'model name' && value) models.push(value);
  }
  return { mhz: mhz.filter((value) => Number.isFinite(value) && value > 0), models };
}

export function fingerprintCpu(): CpuFingerprint {
  const cpus = os.cpus();
  const cores = Math.max(1, cpus.length);
  const cpuinfo = parseCpuinfo(readText('/proc/cpuinfo') ?? '');
  const maxKhz = Number(readText('/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq')?.trim());
  const mhz = Math.round(
    Number.isFinite(maxKhz) && maxKhz > 0
      ? maxKhz / 1000
      : (cpuinfo.mhz[0] ?? cpus.find((cpu) => cpu.speed > 0)?.speed ?? 0),
  );
  return {
    cores,
    mhz,
    totalCompute: mhz * cores,
    model: cpuinfo.models[0] ?? cpus[0]?.model ?? 'unknown',
    arch: goArchitecture(),
  };
}
