/**
 * A service registration (Nomad's `structs.ServiceRegistration`, `nomad/structs/service_registration.go`): one
 * allocation advertising a service of its job with an address and port, written by the node that runs it. Nomad's
 * own service discovery (`provider = "nomad"`), read at `/v1/services` and `/v1/service/:name`.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod/mini';
import { badRequest, DomainError, notFound } from '../../../lib/errors.ts';
import type { PendingEvent } from '../../state.ts';
import type { Allocation } from '../allocations/model.ts';
import { validNamespaceName } from '../namespaces/model.ts';
import { shown, validUuid } from '../nodes/model.ts';

export interface ServiceRegistration {
  /** `_nomad-task-<alloc ID>-<task, or group-<group>>-<service name>-<port label>`, as Nomad's client makes it. */
  ID: string;
  ServiceName: string;
  Namespace: string;
  NodeID: string;
  Datacenter: string;
  JobID: string;
  AllocID: string;
  Tags: string[] | null;
  Address: string;
  Port: number;
  CreateIndex: number;
  ModifyIndex: number;
}

/** Nomad's `ServiceRegistrationStub` and `ServiceRegistrationListStub` (`GET /v1/services`). */
export interface ServiceStub {
  ServiceName: string;
  Tags: string[];
}
export interface NamespaceServices {
  Namespace: string;
  Services: ServiceStub[];
}

/**
 * Limits that keep one call one transaction (each registration is two items, three when it is renamed, beside the
 * index, its table index and the event item: at most 100 actions) and each registration small.
 */
export const serviceLimits = { perCall: 32, idLength: 512, tags: 32, tagLength: 255, addressLength: 255 };

/** Nomad's service name rule (RFC 1123 labels: `Service.Validate`). */
export const validServiceName = /^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]{0,61}[a-zA-Z0-9])$/;
/** Nomad's client prefix of every registration ID (`client/serviceregistration/id.go`). */
export const servicePrefix = '_nomad-task-';

/** The alloc ID inside a registration ID, when it has Nomad's form; the lookup by ID goes through it. */
export function allocOfServiceId(id: string): string | undefined {
  if (!id.startsWith(servicePrefix)) return undefined;
  const alloc = id.slice(servicePrefix.length, servicePrefix.length + 36);
  return validUuid.test(alloc) && id.charAt(servicePrefix.length + 36) === '-' ? alloc : undefined;
}

export const serviceBody = z.object({
  ID: z.string().check(z.describe('`_nomad-task-<alloc ID>-<task>-<service name>-<port label>`.')),
  ServiceName: z.string().check(z.describe('The service name (an RFC 1123 label).')),
  Namespace: z.optional(z.string()).check(z.describe('The job’s namespace (default `default`).')),
  NodeID: z.string().check(z.describe('The registering node’s ID: the caller’s own.')),
  Datacenter: z.optional(z.string()).check(z.describe('The node’s datacenter (the node’s when empty).')),
  JobID: z.string().check(z.describe('The job that holds the service block.')),
  AllocID: z.string().check(z.describe('The allocation the service runs in, placed on the node.')),
  Tags: z.optional(z.nullable(z.array(z.string()))).check(z.describe('The service’s tags.')),
  Address: z.string().check(z.describe('Where the service listens (not 0.0.0.0 or ::).')),
  Port: z.number().check(z.describe('The port it listens on.')),
});
export type ServiceBody = z.output<typeof serviceBody>;

/** `0.0.0.0`, `::` and their bracketed forms: Nomad's `ipaddr.IsAny`, which `ServiceRegistration.Validate` refuses. */
const anyAddresses = new Set(['0.0.0.0', '::', '[::]']);

/**
 * A registration as sent, checked (every problem of the call in one 400, as Nomad's multierror) and made whole:
 * `Namespace` defaults to `default`, `Datacenter` to the node's, `Tags` de-duplicated keeping their order.
 */
export function validateServices(services: ServiceBody[], datacenter: string): ServiceRegistration[] {
  if (services.length > serviceLimits.perCall)
    throw badRequest(`at most ${serviceLimits.perCall} services may be registered in one call, not ${services.length}`);
  const problems: string[] = [];
  const seen = new Set<string>();
  const out = services.map((service, position) => {
    const named = `service ${position} (${JSON.stringify(shown(service.ID))})`;
    const problem = (text: string) => problems.push(`${named}: ${text}`);
    const namespace = service.Namespace || 'default';
    if (!validNamespaceName.test(namespace)) problem(`invalid namespace "${shown(namespace)}"`);
    if (!validServiceName.test(service.ServiceName))
      problem(
        `invalid service name "${shown(service.ServiceName)}": 1 to 63 letters, digits and dashes, not starting or ending with a dash`,
      );
    if (Buffer.byteLength(service.ID) > serviceLimits.idLength)
      problem(`ID is longer than ${serviceLimits.idLength} bytes`);
    if (!validUuid.test(service.AllocID)) problem(`invalid AllocID "${shown(service.AllocID)}": must be a UUID`);
    else if (allocOfServiceId(service.ID) !== service.AllocID)
      problem(`ID must start with "${servicePrefix}${service.AllocID}-", as Nomad's client makes it`);
    if (service.JobID === '') problem('missing JobID');
    if (Buffer.byteLength(service.JobID) > serviceLimits.idLength)
      problem(`JobID is longer than ${serviceLimits.idLength} bytes`);
    if (service.Address === '' || anyAddresses.has(service.Address)) problem('invalid service registration address');
    if (Buffer.byteLength(service.Address) > serviceLimits.addressLength)
      problem(`Address is longer than ${serviceLimits.addressLength} bytes`);
    if (!Number.isInteger(service.Port) || service.Port < 0 || service.Port > 65535)
      problem(`invalid port ${service.Port}: an integer from 0 to 65535`);
    const tags = [...new Set(service.Tags ?? [])];
    if (tags.length > serviceLimits.tags) problem(`at most ${serviceLimits.tags} tags`);
    if (tags.some((tag) => Buffer.byteLength(tag) > serviceLimits.tagLength))
      problem(`a tag is longer than ${serviceLimits.tagLength} bytes`);
    if (service.Datacenter && service.Datacenter !== datacenter)
      problem(`Datacenter "${shown(service.Datacenter)}" is not the node's datacenter "${shown(datacenter)}"`);
    const key = `${namespace}\u0000${service.ID}`;
    if (seen.has(key)) problem('registered twice in one call');
    seen.add(key);
    return {
      ID: service.ID,
      ServiceName: service.ServiceName,
      Namespace: namespace,
      NodeID: service.NodeID,
      Datacenter: datacenter,
      JobID: service.JobID,
      AllocID: service.AllocID,
      Tags: service.Tags === null || service.Tags === undefined ? null : tags,
      Address: service.Address,
      Port: service.Port,
      CreateIndex: 0,
      ModifyIndex: 0,
    };
  });
  if (problems.length > 0)
    throw badRequest(
      problems.length === 1
        ? (problems[0] as string)
        : `${problems.length} errors occurred:\n${problems.map((text) => `\t* ${text}`).join('\n')}`,
    );
  return out;
}

/** Client statuses after which an allocation's services are gone (Nomad's `ClientTerminalStatus`). */
const clientTerminal = new Set(['complete', 'failed', 'lost']);

/**
 * Why `nodeId` may not register `registration` for `alloc` (what the store holds under its AllocID), or nothing: the
 * allocation must exist (404 `alloc not found`), be placed on that node (403, as any other node's allocation), not be
 * client-terminal, and be of the registration's namespace and job (400). Nomad's server checks only the node ID; its
 * client registers only its own running allocations, which this makes a rule.
 */
export function allocationRefusal(
  registration: Pick<ServiceRegistration, 'ID' | 'Namespace' | 'JobID'>,
  alloc: Pick<Allocation, 'ID' | 'NodeID' | 'Namespace' | 'JobID' | 'ClientStatus'> | undefined,
  nodeId: string,
): DomainError | undefined {
  if (!alloc) return notFound('alloc not found');
  if (alloc.NodeID !== nodeId) return new DomainError('denied', 'Permission denied');
  const named = `service ${JSON.stringify(shown(registration.ID))}`;
  if (clientTerminal.has(alloc.ClientStatus))
    return badRequest(`${named}: allocation ${alloc.ID} is ${alloc.ClientStatus}; its services are not registered`);
  if (alloc.Namespace !== registration.Namespace)
    return badRequest(
      `${named}: Namespace "${shown(registration.Namespace)}" is not its allocation's "${alloc.Namespace}"`,
    );
  if (alloc.JobID !== registration.JobID)
    return badRequest(`${named}: JobID "${shown(registration.JobID)}" is not its allocation's "${shown(alloc.JobID)}"`);
  return undefined;
}

/** Nomad's `ServiceRegistration.Equal`: the same fields, the tags as a set (the indexes aside). */
export function sameRegistration(a: ServiceRegistration, b: ServiceRegistration): boolean {
  const tags = (registration: ServiceRegistration) => [...new Set(registration.Tags ?? [])].sort().join('\u0000');
  return (
    a.ID === b.ID &&
    a.ServiceName === b.ServiceName &&
    a.NodeID === b.NodeID &&
    a.Datacenter === b.Datacenter &&
    a.JobID === b.JobID &&
    a.AllocID === b.AllocID &&
    a.Namespace === b.Namespace &&
    a.Address === b.Address &&
    a.Port === b.Port &&
    tags(a) === tags(b)
  );
}

/**
 * The Service topic's event of a write that stored (or removed) `registration`, as Nomad's `events.go`: Key the ID,
 * FilterKeys the job and the service name, the payload `{"Service": …}`. `type` is the write's:
 * `ServiceRegistration`, `ServiceDeregistration`, or the allocation update whose terminal allocation removed it.
 */
export function serviceEvent(type: string, registration: ServiceRegistration): PendingEvent {
  return {
    Topic: 'Service',
    Type: type,
    Key: registration.ID,
    Namespace: registration.Namespace,
    FilterKeys: [registration.JobID, registration.ServiceName],
    Payload: { Service: registration },
  };
}

/** Nomad's `HashWith`: SHA-256 over the port (8 bytes, big-endian), the identity fields, the tags and the key. */
export function hashWith(registration: ServiceRegistration, key: string): string {
  const port = Buffer.alloc(8);
  port.writeBigUInt64BE(BigInt.asUintN(64, BigInt(registration.Port)));
  const hash = createHash('sha256').update(port);
  for (const part of [
    registration.AllocID,
    registration.ID,
    registration.Namespace,
    registration.Address,
    registration.ServiceName,
    ...(registration.Tags ?? []),
    key,
  ])
    hash.update(part, 'utf8');
  return hash.digest('hex');
}

/** Nomad's `ErrMalformedChooseParameter`. */
export const malformedChoose = "Parameter for choose must be in form '<number>|<key>'";

/**
 * `?choose=<n>|<key>`: Nomad's rendezvous hashing. Each registration is ranked by `hashWith(key)` (a stable sort, so
 * equal hashes keep the page's order) and the first `n` are answered: the same key picks the same instances while
 * they last. A value not of that form is a 400 (`failed to choose services: …`); so is a negative `n`, on which
 * Nomad's server panics.
 */
export function choose(services: ServiceRegistration[], parameter: string): ServiceRegistration[] {
  const separator = parameter.indexOf('|');
  const count = separator < 0 ? '' : parameter.slice(0, separator);
  const key = separator < 0 ? '' : parameter.slice(separator + 1);
  const n = /^[+-]?\d+$/.test(count) ? Number(count) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 0 || key === '')
    throw badRequest(`failed to choose services: ${malformedChoose}`);
  return services
    .map((service) => ({ hash: hashWith(service, key), service }))
    .sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0))
    .slice(0, Math.min(n, services.length))
    .map((entry) => entry.service);
}

/**
 * `GET /v1/services`: per namespace, each service name with the union of its registrations' tags. Nomad answers maps
 * in Go's random order; here namespaces, names and tags are sorted, so an answer is stable between reads.
 */
export function serviceStubs(
  registrations: Array<Pick<ServiceRegistration, 'Namespace' | 'ServiceName' | 'Tags'>>,
): NamespaceServices[] {
  const namespaces = new Map<string, Map<string, Set<string>>>();
  for (const registration of registrations) {
    const names = namespaces.get(registration.Namespace) ?? new Map<string, Set<string>>();
    namespaces.set(registration.Namespace, names);
    const tags = names.get(registration.ServiceName) ?? new Set<string>();
    names.set(registration.ServiceName, tags);
    for (const tag of registration.Tags ?? []) tags.add(tag);
  }
  const byName = <T>(entries: Iterable<[string, T]>) => [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return byName(namespaces).map(([namespace, names]) => ({
    Namespace: namespace,
    Services: byName(names).map(([name, tags]) => ({ ServiceName: name, Tags: [...tags].sort() })),
  }));
}
