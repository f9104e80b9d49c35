import * as z from 'zod';
import { notFound, permissionDenied } from '../../lib/errors.ts';
import { type PathSpec, path } from '../framework/backend.ts';
import { isKvV2 } from '../mounts/kv-version.ts';
import { tokenFromHeaders } from '../tokens/caller.ts';
import type { BuiltinServices } from './builtin.ts';
import { describeMount } from './mounts-paths.ts';

/**
 * `sys/internal/ui/mounts/:path`: which mount serves a path, and its type and options (the `vault kv` commands ask it
 * whether a mount is kv version 1 or 2 before they build their URLs). As in Vault it needs a token with some access to
 * the mount: here, any capability other than `deny` on the path asked about, or for kv 2 on its `data/` or `metadata/`
 * path.
 */
export const internalUiMountPaths = (services: Pick<BuiltinServices, 'tokens' | 'mounts' | 'policies'>): PathSpec[] => [
  path({
    pattern: 'internal/ui/mounts/:path+',
    fields: z.object({ path: z.string().describe('The path to look up: the mount that serves it is described.') }),
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
        const acl = await services.policies.acl(entry.policies);
        const rest = asked.slice(mount.path.length);
        const candidates = [asked, mount.path, ...(mount.type === 'kv' && isKvV2(mount) ? [`${mount.path}data/${rest}`, `${mount.path}metadata/${rest}`] : [])];
        const allowed = candidates.some((candidate) => acl.capabilities(candidate).some((capability) => capability !== 'deny'));
        if (!allowed) throw permissionDenied();
        return { data: { ...describeMount(mount), path: mount.path } };
      },
    },
  }),
];
