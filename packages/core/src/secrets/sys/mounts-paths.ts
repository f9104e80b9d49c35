import * as z from 'zod';
import type { Core } from '../../core.ts';
import { formatDuration } from '../../lib/duration.ts';
import { type PathSpec, path, type Request } from '../framework/backend.ts';
import { badRequest, notFound } from '../../lib/errors.ts';
import { bool, duration } from '../framework/fields.ts';
import { disableMount } from '../mounts/disable-mount.ts';
import { checkKvVersion, isKvV2 } from '../mounts/kv-version.ts';
import { fullPath, type MountEntry, type MountTableName, mountTtls, normaliseMountPath } from '../mounts/mount-table.ts';

/**
 * Vault's mount options are strings; clients send `{"version": 2}` as often as `{"version": "2"}`. An option that
 * names an endpoint (`*_endpoint`, `*_url`, e.g. the cloud engine's `iam_endpoint`) must be an http(s) URL with a
 * host, so a mount that could never reach its API is refused when it is enabled or tuned, not at its first request.
 */
const mountOptions = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String))
  .superRefine((options, context) => {
    for (const [name, value] of Object.entries(options)) {
      if (/(_endpoint|_url)$/.test(name) && value !== '' && !isHttpUrl(value)) {
        context.addIssue({ code: 'custom', path: [name], message: `must be an http or https URL with a host, not "${value.slice(0, 200)}"` });
      }
      if (name === 'retry_base_ms' && !/^\d{1,6}$/.test(value)) {
        context.addIssue({ code: 'custom', path: [name], message: 'must be a whole number of milliseconds (at most 999999)' });
      }
    }
  });

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

const tuneFields = {
  default_lease_ttl: duration.optional(),
  max_lease_ttl: duration.optional(),
  description: z.string().optional(),
  options: mountOptions.optional(),
};

const enableFields = z.object({
  path: z.string().min(1),
  type: z.string().min(1),
  description: z.string().default(''),
  config: z.object({ default_lease_ttl: duration.optional(), max_lease_ttl: duration.optional() }).default({}),
  options: mountOptions.default({}),
  local: bool.default(false),
  seal_wrap: bool.default(false),
});

/** `sys/mounts` (secrets engines) and `sys/auth` (auth methods): list, enable, read, tune, disable. */
export function mountPaths(table: MountTableName): PathSpec[] {
  const prefix = table === 'auth' ? 'auth' : 'mounts';
  return [
    path({
      pattern: prefix,
      fields: z.object({}),
      operations: {
        read: async ({ core }) => {
          const entries = await core.mounts.list(table);
          const shown = entries.map((entry) => [displayPath(entry), describeMount(entry)]);
          return { data: Object.fromEntries(shown) };
        },
      },
    }),
    path({
      pattern: `${prefix}/:path+/tune`,
      fields: z.object({ path: z.string(), ...tuneFields }),
      // As in Vault, changing how callers log in is a root-level act: `sys/auth/*` needs sudo.
      sudo: table === 'auth',
      operations: {
        read: async ({ core, data }) => ({ data: describeTune(await existing(core, table, data.path)) }),
        update: async ({ core, data }) => {
          const entry = await existing(core, table, data.path);
          const options = data.options && tuneOptions(entry, data.options);
          await core.mounts.tune(entry, {
            defaultLeaseTtl: data.default_lease_ttl,
            maxLeaseTtl: data.max_lease_ttl,
            description: data.description,
            ...(options ? { options } : {}),
          });
          return undefined;
        },
      },
    }),
    path({
      pattern: `${prefix}/:path+`,
      fields: enableFields.partial({ type: true }),
      sudo: table === 'auth',
      operations: {
        read: async ({ core, data }) => ({ data: describeMount(await existing(core, table, data.path as string)) }),
        update: async (request) => {
          const data = request.data as Partial<z.output<typeof enableFields>> & { path: string };
          if (!data.type) throw badRequest('"type" is required');
          // As Vault: `kv-v2` is `kv` with `options.version` 2.
          const type = data.type === 'kv-v2' ? 'kv' : data.type;
          const options = data.type === 'kv-v2' ? { ...data.options, version: '2' } : (data.options ?? {});
          if (type === 'kv') checkKvVersion(options.version);
          await request.core.mounts.enable(table, data.path, {
            type,
            description: data.description ?? '',
            config: { defaultLeaseTtl: data.config?.default_lease_ttl ?? 0, maxLeaseTtl: data.config?.max_lease_ttl ?? 0 },
            options,
            local: data.local ?? false,
            sealWrap: data.seal_wrap ?? false,
          });
          return undefined;
        },
        delete: async (request) => {
          await disable(request, table);
          return undefined;
        },
      },
    }),
  ];
}

/**
 * A tune's options. For `kv`, `version` 2 on a version 1 mount makes it versioned: the kv engine upgrades its secrets
 * in place on the mount's first version 2 request (each becomes version 1 of a versioned secret), as Vault's plugin
 * does on its own; going back is refused, as in Vault.
 */
function tuneOptions(entry: MountEntry, options: Record<string, string>): Record<string, string> {
  if (entry.type !== 'kv' || options.version === undefined) return options;
  checkKvVersion(options.version);
  if (isKvV2(entry) && options.version !== '2') throw badRequest('cannot downgrade mount from version 2');
  return options;
}

/**
 * Disabling revokes every lease of the mount first, and for an auth method every token it issued; if a lease cannot
 * be revoked, the mount stays. Where the mount's backend is not bundled, the sweep revokes the leases and then removes
 * the mount (see `disableMount`).
 */
async function disable(request: Request, table: MountTableName): Promise<void> {
  const { core } = request;
  const path = (request.data as { path: string }).path;
  const entry = await core.mounts.find(table, path);
  if (!entry) return; // Vault answers success for a path with nothing mounted.
  if (entry.builtin) throw badRequest(`cannot disable the built-in mount ${entry.path}`);
  await disableMount(core, entry);
}

async function existing(core: Core, table: MountTableName, path: string): Promise<MountEntry> {
  const entry = (await core.mounts.list(table)).find((mount) => mount.path === fullPath(table, normaliseMountPath(path)));
  if (!entry) throw notFound(`no mount at "${path}"`);
  return entry;
}

const displayPath = (entry: MountEntry) => (entry.table === 'auth' ? entry.path.slice('auth/'.length) : entry.path);

export function describeMount(entry: MountEntry): Record<string, unknown> {
  return {
    type: entry.type,
    description: entry.description,
    accessor: entry.accessor,
    uuid: entry.uuid,
    config: { default_lease_ttl: entry.config.defaultLeaseTtl, max_lease_ttl: entry.config.maxLeaseTtl, force_no_cache: false },
    options: Object.keys(entry.options).length > 0 ? entry.options : null,
    local: entry.local,
    seal_wrap: entry.sealWrap,
    external_entropy_access: false,
  };
}

/** As Vault shows it: the effective TTLs, so a mount that sets none shows the system's. */
function describeTune(entry: MountEntry): Record<string, unknown> {
  const { defaultTtl, maxTtl } = mountTtls(entry);
  return {
    description: entry.description,
    default_lease_ttl: defaultTtl,
    max_lease_ttl: maxTtl,
    default_lease_ttl_string: formatDuration(defaultTtl),
    max_lease_ttl_string: formatDuration(maxTtl),
    force_no_cache: false,
  };
}
