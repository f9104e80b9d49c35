/**
 * A job's networks (a task group's `Networks`, a task's `Resources.Networks`) as Nomad stores and answers them. The
 * HTTP agent converts the `api` networks to `structs` ones (`command/agent/job_endpoint.go`
 * `ApiNetworkResourceToStructs`: `Mode`, `CIDR`, `IP`, `Hostname`, `MBits`, `DNS`, `CNI` and the ports; `Device` is
 * not carried; no networks is `nil`), then the server canonicalises each (`structs.NetworkResource.Canonicalize`: empty
 * port lists are nil, a port naming no host network names `default`). Nomad sets no `Mode` (an empty one means host
 * wherever it is read) and `api.NetworkResource.Canonicalize` does nothing. `NetworkResource` and `Port` encode
 * without their empty fields (`omit-empty.ts`), so that is how they are kept. Garbage (a network or port that is not
 * an object, ports that are not a list) is kept as sent for validation and placement to judge. Idempotent: a job as
 * `GET /v1/job/:id` answers it canonicalises to itself.
 */
import { networkJson } from '../omit-empty.ts';

type Loose = Record<string, unknown>;

const isObject = (value: unknown): value is Loose =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `structs.Port` from the `api` one (`ApiPortToStructs`), its host network `default` unless it names one. */
function canonicalPort(port: unknown): unknown {
  if (!isObject(port)) return port;
  return {
    Label: port.Label ?? '',
    Value: port.Value ?? 0,
    To: port.To ?? 0,
    HostNetwork:
      port.HostNetwork === undefined || port.HostNetwork === null || port.HostNetwork === ''
        ? 'default'
        : port.HostNetwork,
    IgnoreCollision: port.IgnoreCollision ?? false,
  };
}

/** A list of ports: none (absent, null, empty) is nil. */
function canonicalPorts(ports: unknown): unknown {
  if (ports === undefined || ports === null || (Array.isArray(ports) && ports.length === 0)) return null;
  return Array.isArray(ports) ? ports.map(canonicalPort) : ports;
}

/** One network, as Nomad stores it and then encodes it (its empty fields left out). */
export function canonicalNetwork(network: unknown): unknown {
  if (!isObject(network)) return network;
  const dns = network.DNS;
  const cni = network.CNI;
  return networkJson({
    Mode: network.Mode ?? '',
    CIDR: network.CIDR ?? '',
    IP: network.IP ?? '',
    Hostname: network.Hostname ?? '',
    MBits: network.MBits ?? 0,
    DNS: isObject(dns)
      ? { Servers: dns.Servers ?? null, Searches: dns.Searches ?? null, Options: dns.Options ?? null }
      : (dns ?? null),
    ReservedPorts: canonicalPorts(network.ReservedPorts),
    DynamicPorts: canonicalPorts(network.DynamicPorts),
    CNI: isObject(cni) ? { Args: cni.Args ?? null } : (cni ?? null),
  });
}

/** A list of networks: none (absent, null, empty) is nil; each canonical. */
export function canonicalNetworks(networks: unknown): unknown {
  if (networks === undefined || networks === null || (Array.isArray(networks) && networks.length === 0)) return null;
  return Array.isArray(networks) ? networks.map(canonicalNetwork) : networks;
}
