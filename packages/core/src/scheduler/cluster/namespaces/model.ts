/**
 * A namespace (Nomad's `structs.Namespace`): jobs, allocations and their ACL live in one. `default` is built in: it
 * always exists (as Nomad creates it at index 1 until it is changed) and cannot be deleted. Names, the description
 * limit and error texts are Nomad's (`nomad/structs/structs.go`, `nomad/namespace_endpoint.go`). `Quota` must be
 * empty: a quota names a quota specification, and this service has none (Nomad refuses a namespace naming a missing
 * one). `NodePoolConfiguration` is Nomad Enterprise's (node pool governance: the default pool of the namespace's jobs
 * and the pools they may or may not use); Vault and Consul configurations are refused as Nomad's community edition
 * refuses them (unlicensed). Nomad emits no event for namespaces, and neither does this service.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod/mini';
import { badRequest } from '../../../lib/errors.ts';
import { shown } from '../../acl/identifiers.ts';
import { metaProblem, metaSchema } from '../meta.ts';

export interface NamespaceCapabilities {
  EnabledTaskDrivers: string[] | null;
  DisabledTaskDrivers: string[] | null;
  EnabledNetworkModes: string[] | null;
  DisabledNetworkModes: string[] | null;
}

export interface NamespaceNodePoolConfiguration {
  Default: string;
  Allowed: string[] | null;
  Denied: string[] | null;
}

export interface Namespace {
  Name: string;
  Description: string;
  Quota: string;
  Capabilities: NamespaceCapabilities | null;
  NodePoolConfiguration: NamespaceNodePoolConfiguration | null;
  VaultConfiguration: null;
  ConsulConfiguration: null;
  Meta: Record<string, string> | null;
  Hash: string;
  CreateIndex: number;
  ModifyIndex: number;
}

export type NamespaceContent = Omit<Namespace, 'Hash' | 'CreateIndex' | 'ModifyIndex'>;

export const DEFAULT_NAMESPACE = 'default';
export const validNamespaceName = /^[a-zA-Z0-9-]{1,128}$/;
const validPoolGlob = /^[a-zA-Z0-9\-_*]{1,128}$/;
const maxDescriptionLength = 256;

/** Nomad's SetHash over what a user sets (SHA-256 where Nomad's is BLAKE2b-256: `node-pools/model.ts`). */
export function namespaceHash(namespace: NamespaceContent): string {
  const hash = createHash('sha256');
  hash.update(namespace.Name).update(namespace.Description).update(namespace.Quota);
  const capabilities = namespace.Capabilities;
  if (capabilities) {
    for (const list of [
      capabilities.EnabledTaskDrivers,
      capabilities.DisabledTaskDrivers,
      capabilities.EnabledNetworkModes,
      capabilities.DisabledNetworkModes,
    ])
      for (const entry of list ?? []) hash.update(entry);
  }
  const pools = namespace.NodePoolConfiguration;
  if (pools) {
    hash.update(pools.Default);
    for (const pool of [...(pools.Allowed ?? []), ...(pools.Denied ?? [])]) hash.update(pool);
  }
  for (const key of Object.keys(namespace.Meta ?? {}).sort()) hash.update(key).update(namespace.Meta?.[key] ?? '');
  return hash.digest('base64');
}

const builtInContent: NamespaceContent = {
  Name: DEFAULT_NAMESPACE,
  Description: 'Default shared namespace',
  Quota: '',
  Capabilities: null,
  NodePoolConfiguration: null,
  VaultConfiguration: null,
  ConsulConfiguration: null,
  Meta: null,
};
/** The default namespace as Nomad creates it at index 1 (answered until it is changed). */
export const builtInDefaultNamespace: Namespace = Object.freeze({
  ...builtInContent,
  Hash: namespaceHash(builtInContent),
  CreateIndex: 1,
  ModifyIndex: 1,
});

const names = (description: string) => z.nullish(z.array(z.string())).check(z.describe(description));

export const namespaceBody = z.object({
  Name: z.optional(z.string()).check(z.describe('The namespace name: 1 to 128 letters, digits and dashes.')),
  Description: z.optional(z.string()).check(z.describe('A description (at most 256 characters).')),
  Quota: z
    .optional(z.string())
    .check(z.describe('A quota specification to apply; this service has none, so it must be empty.')),
  Capabilities: z
    .nullish(
      z.object({
        EnabledTaskDrivers: names('Task drivers jobs of the namespace may use (none: all).'),
        DisabledTaskDrivers: names('Task drivers jobs of the namespace may not use.'),
        EnabledNetworkModes: names('Network modes jobs of the namespace may use (none: all).'),
        DisabledNetworkModes: names('Network modes jobs of the namespace may not use.'),
      }),
    )
    .check(z.describe('What jobs of the namespace may use.')),
  NodePoolConfiguration: z
    .nullish(
      z.object({
        Default: z.optional(z.string()).check(z.describe('The pool of a job that names none (empty: `default`).')),
        Allowed: names('Pools (globs) jobs of the namespace may use; not with Denied.'),
        Denied: names('Pools (globs) jobs of the namespace may not use; not with Allowed.'),
      }),
    )
    .check(z.describe('Node pool governance of the namespace (Nomad Enterprise).')),
  VaultConfiguration: z.nullish(z.unknown()).check(z.describe('Not supported: must be null.')),
  ConsulConfiguration: z.nullish(z.unknown()).check(z.describe('Not supported: must be null.')),
  Meta: metaSchema('The namespace'),
});

export type NamespaceBody = z.output<typeof namespaceBody>;

/** The namespace a body describes, validated as Nomad's UpsertNamespaces does: every problem named in one 400. */
export function validateNamespace(body: NamespaceBody): NamespaceContent {
  const name = body.Name ?? '';
  const description = body.Description ?? '';
  const problems: string[] = [];
  if (!validNamespaceName.test(name))
    problems.push(`invalid name ${JSON.stringify(shown(name))}. Must match regex ^[a-zA-Z0-9-]{1,128}$`);
  if (description.length > maxDescriptionLength) problems.push(`description longer than ${maxDescriptionLength}`);
  const meta = body.Meta ?? null;
  const metaError = metaProblem(meta);
  if (metaError) problems.push(metaError);
  let pools: NamespaceNodePoolConfiguration | null = null;
  if (body.NodePoolConfiguration) {
    pools = {
      Default: body.NodePoolConfiguration.Default || 'default',
      Allowed: body.NodePoolConfiguration.Allowed ?? null,
      Denied: body.NodePoolConfiguration.Denied ?? null,
    };
    if (!/^[a-zA-Z0-9\-_]{1,128}$/.test(pools.Default))
      problems.push(
        `invalid node pool configuration: invalid default node pool ${JSON.stringify(shown(pools.Default))}`,
      );
    if (pools.Allowed && pools.Denied)
      problems.push('invalid node pool configuration: only one of Allowed and Denied may be set');
    for (const pool of [...(pools.Allowed ?? []), ...(pools.Denied ?? [])])
      if (!validPoolGlob.test(pool))
        problems.push(`invalid node pool configuration: invalid node pool ${JSON.stringify(shown(pool))}`);
  }
  if (body.VaultConfiguration != null) problems.push('invalid vault configuration: Multi-Cluster Vault is unlicensed.');
  if (body.ConsulConfiguration != null)
    problems.push('invalid consul configuration: Multi-Cluster Consul is unlicensed.');
  if (problems.length > 0) throw badRequest(`Invalid namespace ${JSON.stringify(shown(name))}: ${problems.join('; ')}`);
  const quota = body.Quota ?? '';
  if (quota !== '')
    throw badRequest(`namespace ${JSON.stringify(name)} using non-existent quota ${JSON.stringify(shown(quota))}`);
  const capabilities = body.Capabilities
    ? {
        EnabledTaskDrivers: body.Capabilities.EnabledTaskDrivers ?? null,
        DisabledTaskDrivers: body.Capabilities.DisabledTaskDrivers ?? null,
        EnabledNetworkModes: body.Capabilities.EnabledNetworkModes ?? null,
        DisabledNetworkModes: body.Capabilities.DisabledNetworkModes ?? null,
      }
    : null;
  return {
    Name: name,
    Description: description,
    Quota: quota,
    Capabilities: capabilities,
    NodePoolConfiguration: pools,
    VaultConfiguration: null,
    ConsulConfiguration: null,
    Meta: meta,
  };
}
