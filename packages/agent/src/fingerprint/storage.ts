/**
 * The disk of the agent's data directory, as Nomad's `storage` fingerprinter reports it from `df -k -P`: the volume
 * (the mounted file system's source, from the kernel's mount table), its size and the space an unprivileged user may
 * still write (`f_bavail`). The node's `Disk.DiskMB` is that free space in MiB.
 */
import { readFileSync, statfsSync } from 'node:fs';
import path from 'node:path';

export interface StorageFingerprint {
  volume: string;
  bytesTotal: number;
  bytesFree: number;
}

/** Decodes the octal escapes (`\040` for a space) the kernel writes in mount tables. */
const unescapeMount = (text: string) =>
  text.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));

/** The source of the mount that holds `directory`: the longest mount point that is a prefix of it. */
export function volumeOf(directory: string, mountinfo: string): string | undefined {
  let best: { point: string; source: string } | undefined;
  for (const line of mountinfo.split('\n')) {
    // mountinfo: id parent major:minor root mountpoint options [optional fields] - fstype source superoptions
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    const point = unescapeMount(before.split(' ')[4] ?? '');
    const source = unescapeMount(after.split(' ')[1] ?? '');
    const inside = point === '/' || directory === point || directory.startsWith(`${point}/`);
    if (inside && (!best || point.length >= best.point.length)) best = { point, source };
  }
  return best?.source;
}

export function fingerprintStorage(dataDir: string): StorageFingerprint {
  const directory = path.resolve(dataDir);
  const stats = statfsSync(directory);
  let mountinfo = '';
  try {
    mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    // not Linux: the volume is named by its directory
  }
  return {
    volume: volumeOf(directory, mountinfo) ?? directory,
    bytesTotal: stats.blocks * stats.bsize,
    bytesFree: stats.bavail * stats.bsize,
  };
}
