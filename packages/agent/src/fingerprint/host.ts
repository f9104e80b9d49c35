/**
 * The host, as Nomad's `host` fingerprinter reports it: `os.name` and `os.version` (the distribution, read as
 * gopsutil reads it: Debian's own version file, else `/etc/os-release`), `kernel.name` (Go's `runtime.GOOS`),
 * `kernel.arch` (`uname -m`), `kernel.version` (`uname -r`) and `unique.hostname`; and the signals a task may be sent
 * (Nomad's `signal` fingerprinter: `os.signals`).
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface HostFingerprint {
  osName: string;
  osVersion: string;
  kernelName: string;
  kernelArch: string;
  kernelVersion: string;
  hostname: string;
  signals: string[];
}

/** The `KEY=value` pairs of an os-release file (quotes removed). */
export function parseOsRelease(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (match) fields[match[1] as string] = (match[2] as string).replace(/^(["'])(.*)\1$/, '$2');
  }
  return fields;
}

const readText = (file: string) => {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
};

/** Go's `runtime.GOOS` for Node's `os.platform()`. */
const goOs: Record<string, string> = { win32: 'windows', sunos: 'solaris' };

export function fingerprintHost(): HostFingerprint {
  const release = parseOsRelease(readText('/etc/os-release') ?? readText('/usr/lib/os-release') ?? '');
  const platform = os.platform();
  const osName = release.ID ?? platform;
  const debianVersion = osName === 'debian' ? readText('/etc/debian_version') : undefined;
  return {
    osName,
    osVersion: debianVersion ?? release.VERSION_ID ?? os.release(),
    kernelName: goOs[platform] ?? platform,
    kernelArch: os.machine(),
    kernelVersion: os.release(),
    hostname: os.hostname(),
    signals: Object.keys(os.constants.signals).sort(),
  };
}
