import * as z from 'zod';
import { formatDuration } from '../../lib/duration.ts';
import { badRequest, notFound } from '../../lib/errors.ts';
import { type PathSpec, path } from '../framework/backend.ts';
import { bool, duration } from '../framework/fields.ts';
import { type DisableServices, disableMount } from '../mounts/disable-mount.ts';
import { checkKvVersion, isKvV2 } from '../mounts/kv-version.ts';
import {
  checkListingVisibility,
  fullPath,
  type MountEntry,
  type MountTableName,
  mountTtls,
  normaliseMountPath,
} from '../mounts/mount-table.ts';
import { isOperatorOnlyOption, operatorOnlyMessage } from '../mounts/operator-settings.ts';
import type { BuiltinServices } from './builtin.ts';
import { version } from './server-identity.ts';
import { typeKvPairs, typeString } from '../framework/vault-field-types.ts';

/** What the mount paths use: the mount table, and what disabling a mount needs. */
export type MountServices = Pick<BuiltinServices, 'mounts'> & DisableServices;

/**
 * Vault's mount options are `TypeKVPairs` (`vault-field-types.ts`): strings, so `{"version": 2}` is `{"version": "2"}`
 * (and a `"k=v"` list is a map). An option that
 * names a destination (`*_endpoint`, `*_url`, …, e.g. the cloud engine's `iam_endpoint`) is refused at enable and at
 * tune, for secrets engines and auth methods alike: where an engine sends its credentials is operator configuration
 * (`mounts/operator-settings.ts`, docs/operator-settings.md), so no token that may tune a mount can redirect them.
 */
const mountOptions = typeKvPairs.superRefine((options, context) => {
  for (const [name, value] of Object.entries(options)) {
    if (isOperatorOnlyOption(name)) {
      context.addIssue({
        code: 'custom',
        path: [name],
        message: operatorOnlyMessage(name).replace(/^options\.\S+ /, ''),
      });
    }
    if (name === 'retry_base_ms' && !/^\d{1,6}$/.test(value)) {
      context.addIssue({
        code: 'custom',
        path: [name],
        message: 'must be a whole number of milliseconds (at most 999999)',
      });
    }
  }
});

const defaultLeaseTtl = duration
  .optional()
  .describe('The default lease TTL for this mount (seconds or a duration such as "1h").');
const maxLeaseTtl = duration
  .optional()
  .describe('The max lease TTL for this mount (seconds or a duration such as "1h").');
const mountPath = typeString.pipe(z.string().min(1)).describe('The path of the mount. Example: "aws/east"');
const typeDescription = 'The type of the backend. Example: "kv"';
const listingVisibility = typeString
  .pipe(z.string())
  .optional()
  .describe(
    'Whether sys/internal/ui/mounts lists this mount to callers without a token: "unauth" does, "hidden" and "" (the default) do not.',
  );

const tuneFields = {
  default_lease_ttl: defaultLeaseTtl,
  max_lease_ttl: maxLeaseTtl,
  description: typeString.pipe(z.string()).optional().describe('User-friendly description for this mount.'),
  options: mountOptions
    .optional()
    .describe('The options to pass into the backend: an object with string values (for kv, "version").'),
  listing_visibility: listingVisibility,
};

const enableFields = z.object({
  path: mountPath,
  type: typeString.pipe(z.string().min(1)).describe(typeDescription),
  description: typeString.pipe(z.string()).default('').describe('User-friendly description for this mount.'),
  config: z
    .object({ default_lease_ttl: defaultLeaseTtl, max_lease_ttl: maxLeaseTtl, listing_visibility: listingVisibility })
    .default({})
    .describe('Configuration for this mount, such as default_lease_ttl, max_lease_ttl and listing_visibility.'),
  options: mountOptions
    .default({})
    .describe('The options to pass into the backend: an object with string values (for kv, "version").'),
  local: bool
    .default(false)
    .describe('Mark the mount as a local mount, which is not replicated and is unaffected by replication.'),
  seal_wrap: bool.default(false).describe('Whether to turn on seal wrapping for the mount.'),
});

/** `sys/mounts` (secrets engines) and `sys/auth` (auth methods): list, enable, read, tune, disable. */
export function mountPaths(services: MountServices, table: MountTableName): PathSpec[] {
  const prefix = table === 'auth' ? 'auth' : 'mounts';
  const what = table === 'auth' ? 'auth method' : 'secrets engine';
  return [
    path({
      pattern: prefix,
      fields: z.object({}),
      summaries: { read: `Lists the enabled ${what}s.` },
      operations: {
        read: async () => {
          const entries = await services.mounts.list(table);
          const shown = entries.map((entry) => [displayPath(entry), describeMount(entry)]);
          return { data: Object.fromEntries(shown) };
        },
      },
    }),
    path({
      pattern: `${prefix}/:path+/tune`,
      fields: z.object({ path: mountPath, ...tuneFields }),
      // As in Vault, changing how callers log in is a root-level act: `sys/auth/*` needs sudo.
      sudo: table === 'auth',
      summaries: {
        read: `Reads the tuning of the ${what} at the given path.`,
        update: `Tunes the ${what} at the given path.`,
      },
      operations: {
        read: async ({ data }) => ({ data: describeTune(await existing(services, table, data.path)) }),
        update: async ({ data }) => {
          const entry = await existing(services, table, data.path);
          const options = data.options && tuneOptions(entry, data.options);
          const visibility = checkListingVisibility(data.listing_visibility);
          await services.mounts.tune(entry, {
            defaultLeaseTtl: data.default_lease_ttl,
            maxLeaseTtl: data.max_lease_ttl,
            description: data.description,
            ...(options ? { options } : {}),
            ...(visibility !== undefined ? { listingVisibility: visibility } : {}),
          });
          return undefined;
        },
      },
    }),
    path({
      pattern: `${prefix}/:path+`,
      // `type` is checked by the handler, so a read or a delete needs none.
      fields: enableFields.extend({ type: enableFields.shape.type.optional().describe(typeDescription) }),
      sudo: table === 'auth',
      summaries: {
        read: `Reads the configuration of the ${what} at the given path.`,
        update: `Enables a new ${what} at the given path.`,
        delete: `Disables the ${what} at the given path.`,
      },
      operations: {
        read: async ({ data }) => ({ data: describeMount(await existing(services, table, data.path as string)) }),
        update: async (request) => {
          const data = request.data as Partial<z.output<typeof enableFields>> & { path: string };
          if (!data.type) throw badRequest('"type" is required');
          // As Vault: `kv-v2` is `kv` with `options.version` 2.
          const type = data.type === 'kv-v2' ? 'kv' : data.type;
          const options = data.type === 'kv-v2' ? { ...data.options, version: '2' } : (data.options ?? {});
          if (type === 'kv') checkKvVersion(options.version);
          const visibility = checkListingVisibility(data.config?.listing_visibility);
          await services.mounts.enable(table, data.path, {
            type,
            description: data.description ?? '',
            config: {
              defaultLeaseTtl: data.config?.default_lease_ttl ?? 0,
              maxLeaseTtl: data.config?.max_lease_ttl ?? 0,
              ...(visibility ? { listingVisibility: visibility } : {}),
            },
            options,
            local: data.local ?? false,
            sealWrap: data.seal_wrap ?? false,
          });
          return undefined;
        },
        delete: async ({ data }) => {
          await disable(services, table, data.path as string);
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
async function disable(services: MountServices, table: MountTableName, path: string): Promise<void> {
  const entry = await services.mounts.find(table, path);
  if (!entry) return; // Vault answers success for a path with nothing mounted.
  if (entry.builtin) throw badRequest(`cannot disable the built-in mount ${entry.path}`);
  await disableMount(services, entry);
}

async function existing(
  services: Pick<BuiltinServices, 'mounts'>,
  table: MountTableName,
  path: string,
): Promise<MountEntry> {
  const entry = (await services.mounts.list(table)).find(
    (mount) => mount.path === fullPath(table, normaliseMountPath(path)),
  );
  if (!entry) throw notFound(`no mount at "${path}"`);
  return entry;
}

const displayPath = (entry: MountEntry) => (entry.table === 'auth' ? entry.path.slice('auth/'.length) : entry.path);

/**
 * A mount as Vault's mount listing and `sys/mounts/:path` show it (`mountInfo` in Vault's `vault/logical_system.go`):
 * `options` is null when the mount has none, as Go marshals an empty map; every mount runs the backend built into
 * this version of Keyhaven, so `running_plugin_version` names it and no version is pinned (`plugin_version` "").
 */
export function describeMount(entry: MountEntry): Record<string, unknown> {
  return {
    type: entry.type,
    description: entry.description,
    accessor: entry.accessor,
    uuid: entry.uuid,
    config: {
      default_lease_ttl: entry.config.defaultLeaseTtl,
      max_lease_ttl: entry.config.maxLeaseTtl,
      force_no_cache: false,
      ...(entry.config.listingVisibility ? { listing_visibility: entry.config.listingVisibility } : {}),
      ...(entry.table === 'auth' ? { token_type: defaultTokenType } : {}),
    },
    options: Object.keys(entry.options).length > 0 ? entry.options : null,
    local: entry.local,
    seal_wrap: entry.sealWrap,
    external_entropy_access: false,
    plugin_version: '',
    running_plugin_version: runningPluginVersion,
    running_sha256: '',
  };
}

/** What a builtin plugin reports running in Vault (`v1.19.0+builtin.vault`), here Keyhaven's own version. */
const runningPluginVersion = `v${version}+builtin.keyhaven`;

/** Every auth mount issues service tokens unless its roles say otherwise (Vault's `default-service`). */
const defaultTokenType = 'default-service';

/**
 * As Vault's `handleTuneReadCommon` shows it: the effective TTLs (so a mount that sets none shows the system's), the
 * mount's `options` when it has any (kv version 2: `{"version": "2"}`, which the MariaDB key-management plugin checks
 * before it starts), and an auth mount's token type.
 */
function describeTune(entry: MountEntry): Record<string, unknown> {
  const { defaultTtl, maxTtl } = mountTtls(entry);
  return {
    description: entry.description,
    default_lease_ttl: defaultTtl,
    max_lease_ttl: maxTtl,
    default_lease_ttl_string: formatDuration(defaultTtl),
    max_lease_ttl_string: formatDuration(maxTtl),
    force_no_cache: false,
    ...(entry.table === 'auth' ? { token_type: defaultTokenType } : {}),
    ...(entry.config.listingVisibility ? { listing_visibility: entry.config.listingVisibility } : {}),
    ...(Object.keys(entry.options).length > 0 ? { options: entry.options } : {}),
  };
}
