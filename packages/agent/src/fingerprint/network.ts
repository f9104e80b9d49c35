/**
 * The network, as Nomad's `network` fingerprinter reports it: the interface of the default route (or the one the
 * operator names, Nomad's `network_interface`), its first IPv4 address (`unique.network.ip-address`), and the node's
 * `Networks` and `NodeNetworks` built from it. With no default route, the first interface that is up and not a
 * loopback; with none at all, the loopback (a laptop offline still runs tasks).
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface NetworkFingerprint {
  device: string;
  ip: string;
  cidr: string;
  mac: string;
}

/** The interface of the default IPv4 route in a `/proc/net/route` text. */
export function defaultRouteInterface(routeTable: string): string | undefined {
  for (const line of routeTable.split('\n').slice(1)) {
    const [iface, destination, , flags, , , , mask] = line.trim().split(/\s+/);
    // RTF_UP (1) and a zero destination and mask: the default route.
    if (iface && destination === '00000000' && mask === '00000000' && (Number.parseInt(flags ?? '0', 16) & 1) === 1)
      return iface;
  }
  return undefined;
}

export function fingerprintNetwork(wanted?: string): NetworkFingerprint {
  const interfaces = os.networkInterfaces();
  let routeTable = '';
  try {
    routeTable = readFileSync('/proc/net/route', 'utf8');
  } catch {
    // not Linux: the first interface that is up
  }
  const ipv4 = (name: string) => (interfaces[name] ?? []).find((address) => address.family === 'IPv4');
  const candidates = [
    wanted,
    defaultRouteInterface(routeTable),
    ...Object.keys(interfaces).filter((name) => ipv4(name) && !ipv4(name)?.internal),
    ...Object.keys(interfaces).filter((name) => ipv4(name)),
  ].filter((name): name is string => name !== undefined && ipv4(name) !== undefined);
  if (wanted && candidates[0] !== wanted) throw new Error(`network interface "${wanted}" has no IPv4 address`);
  const device = candidates[0];
  const address = device ? ipv4(device) : undefined;
  if (!device || !address) return { device: 'lo', ip: '127.0.0.1', cidr: '127.0.0.1/32', mac: '' };
  return { device, ip: address.address, cidr: `${address.address}/32`, mac: address.mac };
}
