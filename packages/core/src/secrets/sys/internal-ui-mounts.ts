import * as z from 'zod';
import { notFound, permissionDenied } from '../../lib/errors.ts';
import { type PathSpec, path } from '../framework/backend.ts';
import type { MountEntry } from '../mounts/mount-table.ts';
import type { Acl } from '../policies/acl.ts';
import type { Capability, PathRule } from '../policies/policy-document.ts';
import { tokenFromHeaders } from '../tokens/caller.ts';
import type { BuiltinServices } from './builtin.ts';
import { describeMount } from './mounts-paths.ts';
import { typeString } from '../framework/vault-field-types.ts';

type UiMountServices = Pick<BuiltinServices, 'tokens' | 'mounts' | 'policies'>;

/**
 * `sys/internal/ui/mounts`: the mounts a UI may offer. Without a token, only the mounts tuned with
 * `listing_visibility: "unauth"` (the sign-in page's auth methods), each with its type and description and nothing
 * else; with a token, those and every mount the token's policies touch, described as `sys/mounts` does. A token that
 * is not valid is refused (403) rather than treated as none.
 *
 * `sys/internal/ui/mounts/:path`: which mount serves a path, and its type and options (the `vault kv` commands ask it
 * whether a mount is kv version 1 or 2 before they build their URLs). As in Vault it needs a token with some access to
 * the mount, decided as for the list (`mountAccess`): a token that may read `secret/data/app/*` learns that `secret/`
 * is kv version 2.
 */
export const internalUiMountPaths = (services: UiMountServices): PathSpec[] => [
  path({
    pattern: 'internal/ui/mounts',
    fields: z.object({}),
    unauthenticated: true,
    summaries: {
      read: 'Lists the mounts a UI may show: without a token, the auth methods listed as "unauth"; with one, the mounts it may use.',
    },
    operations: {
      read: async ({ headers }) => {
        const token = tokenFromHeaders(headers);
        const entry = token ? await services.tokens.lookup(token) : undefined;
        if (token && !entry) throw permissionDenied();
        const access = entry ? await mountAccess(services, entry.policies) : undefined;
        const listed = { secret: {} as Record<string, unknown>, auth: {} as Record<string, unknown> };
        for (const mount of await services.mounts.list()) {
          const unauth = mount.config.listingVisibility === 'unauth';
          if (!unauth && !access?.(mount.path)) continue;
          const key = mount.table === 'auth' ? mount.path.slice('auth/'.length) : mount.path;
          listed[mount.table === 'auth' ? 'auth' : 'secret'][key] = access
            ? describeMount(mount)
            : anonymousView(mount);
        }
        return { data: listed };
      },
    },
  }),
  path({
    pattern: 'internal/ui/mounts/:path+',
    fields: z.object({
      path: typeString.pipe(z.string()).describe('The path to look up: the mount that serves it is described.'),
    }),
    unauthenticated: true,
    summaries: { read: 'Returns information about the mount that serves a path, for the UI and the CLI.' },
    operations: {
      read: async ({ data, headers }) => {
        const token = tokenFromHeaders(headers);
        const entry = token ? await services.tokens.lookup(token) : undefined;
        if (!entry) throw permissionDenied();
        const asked = data.path.replace(/^\/+/, '');
        const mount = await services.mounts.resolve(asked);
        if (!mount) throw notFound(`no mount serves "${asked}"`);
        // Vault's pathInternalUIMountRead asks hasMountAccess of the mount, as the list does.
        if (!(await mountAccess(services, entry.policies))(mount.path)) throw permissionDenied();
        return { data: { ...describeMount(mount), path: mount.path } };
      },
    },
  }),
];

/** What a caller without a token learns of an `unauth` mount: enough to offer it, no configuration or options. */
const anonymousView = (mount: MountEntry) => ({ type: mount.type, description: mount.description });

/** Vault's capabilities that count as access to a mount when a rule under its path grants one. */
const granting = new Set<Capability>(['create', 'read', 'update', 'delete', 'list', 'sudo']);

/**
 * Whether a token's policies touch a mount, as Vault's hasMountAccess decides: root does; some capability other than
 * deny on the mount's own path does; else an exact or prefix (`*`) rule whose path lies under the mount's and grants
 * one of create, read, update, delete, list or sudo (rules for one path are merged across policies first, and a deny
 * among them makes that path count for nothing). Segment-wildcard (`+`) rules are not walked, as in Vault.
 */
async function mountAccess(services: UiMountServices, policies: string[]): Promise<(mountPath: string) => boolean> {
  const acl: Acl = await services.policies.acl(policies);
  if (acl.root) return () => true;
  const merged = new Map<string, Set<Capability>>();
  for (const name of new Set(policies)) {
    for (const rule of (await services.policies.get(name).catch(() => undefined))?.rules ?? ([] as PathRule[])) {
      if (rule.pattern === '+' || rule.pattern.includes('/+') || rule.pattern.startsWith('+/')) continue;
      const key = rule.pattern.endsWith('*') ? `prefix:${rule.pattern.slice(0, -1)}` : `exact:${rule.pattern}`;
      const capabilities = merged.get(key) ?? new Set<Capability>();
      for (const capability of rule.capabilities) capabilities.add(capability);
      merged.set(key, capabilities);
    }
  }
  return (mountPath) => {
    if (acl.capabilities(mountPath).some((capability) => capability !== 'deny')) return true;
    for (const [key, capabilities] of merged) {
      const rulePath = key.slice(key.indexOf(':') + 1);
      if (!rulePath.startsWith(mountPath) || capabilities.has('deny')) continue;
      if ([...capabilities].some((capability) => granting.has(capability))) return true;
    }
    return false;
  };
}
