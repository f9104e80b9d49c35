/**
 * The agent's fingerprint against this machine, each figure read again the way an operator would read it (the
 * kernel's files, coreutils, iproute2), never from the code under test.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fingerprintDrivers } from '../../packages/agent/src/drivers.ts';
import { fingerprintMachine, machineAttributes } from '../../packages/agent/src/fingerprint/index.ts';
import { buildNode } from '../../packages/agent/src/node.ts';

const run = (command: string, args: string[]) => execFileSync(command, args, { encoding: 'utf8' }).trim();
const dataDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-agent-fp-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const machine = fingerprintMachine({ dataDir });
const attributes = machineAttributes(machine);

describe("the agent's fingerprint is this machine's", () => {
  it('CPU: online cores, MHz from the kernel, their product, the model and Go’s architecture name', () => {
    const cores = Number(run('getconf', ['_NPROCESSORS_ONLN']));
    const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
    let maxKhz = Number.NaN;
    try {
      maxKhz = Number(readFileSync('/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq', 'utf8'));
    } catch {
      // no cpufreq on this machine (a VM): /proc/cpuinfo's figure is the one
    }
    const mhz = Math.round(
      Number.isFinite(maxKhz) ? maxKhz / 1000 : Number(/^cpu MHz\s*:\s*([\d.]+)/m.exec(cpuinfo)?.[1]),
    );
    expect(mhz).toBeGreaterThan(0);
    expect(attributes['cpu.numcores']).toBe(String(cores));
    expect(attributes['cpu.frequency']).toBe(String(mhz));
    expect(attributes['cpu.totalcompute']).toBe(String(cores * mhz));
    expect(attributes['cpu.modelname']).toBe(/^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim());
    expect(attributes['cpu.arch']).toBe(run('dpkg', ['--print-architecture']));
  });

  it('memory: MemTotal of /proc/meminfo, in bytes', () => {
    const kib = Number(/^MemTotal:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1]);
    expect(attributes['memory.totalbytes']).toBe(String(kib * 1024));
  });

  it('disk: the data directory’s file system as df -k -P reports it', () => {
    const [, line] = run('df', ['-k', '-P', dataDir]).split('\n');
    const [filesystem, blocks, , available] = (line ?? '').split(/\s+/);
    expect(attributes['unique.storage.volume']).toBe(filesystem);
    expect(Math.floor(Number(attributes['unique.storage.bytestotal']) / 1024)).toBe(Number(blocks));
    // Free space moves while the suite writes files: within 1% of the disk.
    expect(Math.abs(Number(attributes['unique.storage.bytesfree']) - Number(available) * 1024)).toBeLessThan(
      Number(blocks) * 1024 * 0.01,
    );
  });

  it('host: uname, os-release, the host name', () => {
    const release = readFileSync('/etc/os-release', 'utf8');
    const id = /^ID=("?)(.+)\1$/m.exec(release)?.[2];
    expect(attributes['kernel.name']).toBe(run('uname', ['-s']).toLowerCase());
    expect(attributes['kernel.version']).toBe(run('uname', ['-r']));
    expect(attributes['kernel.arch']).toBe(run('uname', ['-m']));
    expect(attributes['os.name']).toBe(id);
    expect(attributes['os.version']).toBe(
      id === 'debian'
        ? readFileSync('/etc/debian_version', 'utf8').trim()
        : /^VERSION_ID=("?)(.+)\1$/m.exec(release)?.[2],
    );
    expect(attributes['unique.hostname']).toBe(run('hostname', []));
    expect(attributes['os.signals']?.split(',')).toContain('SIGTERM');
  });

  it('network: the address of the default route’s interface', () => {
    const route = run('ip', ['-4', 'route', 'show', 'default']);
    const device = /\bdev (\S+)/.exec(route)?.[1];
    const expected = device
      ? /inet (\d+\.\d+\.\d+\.\d+)/.exec(run('ip', ['-4', '-o', 'addr', 'show', 'dev', device]))?.[1]
      : '127.0.0.1';
    expect(machine.network.device).toBe(device ?? 'lo');
    expect(attributes['unique.network.ip-address']).toBe(expected);
  });

  it('the node: resources from the fingerprint, Nomad’s defaults, the advertised address', () => {
    const node = buildNode(
      { id: '00000000-0000-4000-8000-000000000001', secretId: '00000000-0000-4000-8000-000000000002' },
      { datacenter: 'dc1', nodePool: 'default', nodeClass: '', meta: { rack: 'r1' }, httpPort: 4646 },
      machine,
      fingerprintDrivers({ rawExecEnabled: false }, new Date()),
    );
    const cores = Number(run('getconf', ['_NPROCESSORS_ONLN']));
    expect(node.Name).toBe(run('hostname', []));
    expect(node.NodeResources.Cpu).toEqual({
      CpuShares: Number(attributes['cpu.totalcompute']),
      TotalCpuCores: cores,
      ReservableCpuCores: Array.from({ length: cores }, (_, core) => core),
    });
    expect(node.NodeResources.Memory.MemoryMB).toBe(Math.floor(Number(attributes['memory.totalbytes']) / 2 ** 20));
    expect(node.NodeResources.Disk.DiskMB).toBe(Math.floor(Number(attributes['unique.storage.bytesfree']) / 2 ** 20));
    expect(node.HTTPAddr).toBe(`${attributes['unique.network.ip-address']}:4646`);
    expect(node.Attributes['nomad.advertise.address']).toBe(node.HTTPAddr);
    expect(node.Attributes['nomad.version']).toMatch(/^\d+\.\d+\.\d+$/);
    expect(node.Meta).toEqual({ rack: 'r1' });
    expect(node).toMatchObject({ Datacenter: 'dc1', NodePool: 'default', TLSEnabled: false });
    expect(node.NodeResources).toMatchObject({ MinDynamicPort: 20_000, MaxDynamicPort: 32_000, Devices: [] });
  });
});

describe('drivers', () => {
  it('raw_exec is detected and healthy (with its driver.raw_exec attribute) only when enabled, as Nomad’s', () => {
    const now = new Date('2026-11-29T00:00:00Z');
    const disabled = fingerprintDrivers({ rawExecEnabled: false }, now);
    const enabled = fingerprintDrivers({ rawExecEnabled: true }, now);
    expect(disabled.raw_exec).toEqual({
      Detected: false,
      Healthy: false,
      HealthDescription: 'disabled',
      UpdateTime: '2026-11-29T00:00:00.000Z',
      Attributes: {},
    });
    expect(enabled.raw_exec).toMatchObject({ Detected: true, Healthy: true, HealthDescription: 'Healthy' });
    const ids = { id: '00000000-0000-4000-8000-000000000001', secretId: '00000000-0000-4000-8000-000000000002' };
    const settings = { datacenter: 'dc1', nodePool: 'default', nodeClass: '', meta: {}, httpPort: 4646 };
    expect(buildNode(ids, settings, machine, enabled).Attributes['driver.raw_exec']).toBe('1');
    expect(buildNode(ids, settings, machine, disabled).Attributes).not.toHaveProperty('driver.raw_exec');
  });
});
