import * as z from 'zod';
import { type PathSpec, path } from '../framework/backend.ts';
import { notFound, permissionDenied } from '../../lib/errors.ts';
import { isKvV2 } from '../mounts/kv-version.ts';
import { describeMount } from './mounts-paths.ts';
import { tokenFromHeaders } from '../tokens/caller.ts';

/**
 * `sys/internal/ui/mounts/:path`: which mount serves a path, and its type and options (the `vault kv` commands ask it
 * whether a mount is kv version 1 or 2 before they build their URLs). As in Vault it needs a token with some access to
 * the mount: here, any capability other than `deny` on the path asked about, or for kv 2 on its `data/` or `metadata/`
 * path.
 */
export const internalUiMountPaths: PathSpec[] = [
  path({
    pattern: 'internal/ui/mounts/:path+',
    fields: z.object({ path: z.string() }),
    unauthenticated: true,
    operations: {
      read: async ({ core, data, headers }) => {
        const token = tokenFromHeaders(headers);
        const entry = token ? await core.tokens.lookup(token) : undefined;
        if (!entry) throw permissionDenied();
        const asked = data.path.replace(/^\/+/, '');
        const mount = await core.mounts.resolve(asked);
        if (!mount) throw notFound(`no mount serves "${asked}"`);
        const acl = await core.policies.acl(entry.policies);
        const rest = asked.slice(mount.path.length);
        const candidates = [asked, mount.path, ...(mount.type === 'kv' && isKvV2(mount) ? [`${mount.path}data/${rest}`, `${mount.path}metadata/${rest}`] : [])];
        const allowed = candidates.some((candidate) => acl.capabilities(candidate).some((capability) => capability !== 'deny'));
        if (!allowed) throw permissionDenied();
        return { data: { ...describeMount(mount), path: mount.path } };
      },
    },
  }),
];
