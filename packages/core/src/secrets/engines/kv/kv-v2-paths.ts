import * as z from 'zod';
import { badRequest, notFound } from '../../../lib/errors.ts';
import { type PathSpec, path, type Reply, type Request } from '../../framework/backend.ts';
import { bool, count, duration } from '../../framework/fields.ts';
import { deleteSecret, listSecrets } from './kv-v2-metadata.ts';
import {
  destroyVersionData,
  effective,
  goDuration,
  isDeleted,
  newMetadata,
  readConfig,
  readMetadata,
  readVersionData,
  type SecretMetadata,
  saveMetadata,
  secretPath,
  timestamp,
  type VersionMetadata,
  versionReply,
  writeConfig,
  writeVersion,
} from './kv-v2-store.ts';
import { typeKvPairs, typeMap, typeString } from '../../framework/vault-field-types.ts';

/**
 * kv version 2's endpoints, as Vault's versioned key/value plugin serves them: `config`, `data/:path`,
 * `metadata/:path`, `delete/:path`, `undelete/:path`, `destroy/:path`, `subkeys/:path`.
 *
 * A row's own fields are checked by its handler (`parse`): on a version 1 mount the same URLs are plain secrets with
 * any body, so the rows accept anything and leave the checking to the version that serves the request. A row declares
 * (and describes) the fields its handlers check, each accepting anything (`accepting`).
 */
function parse<Schema extends z.ZodType>(schema: Schema, request: Request): z.output<Schema> {
  const parsed = schema.safeParse(request.data);
  if (!parsed.success) {
    throw badRequest(
      parsed.error.issues
        .map((issue) => `invalid value for "${issue.path.join('.') || 'request'}": ${issue.message}`)
        .join('; '),
    );
  }
  return parsed.data;
}

const secretPathDescription = 'Location of the secret.';
const secretPathField = typeString.pipe(z.string()).describe(secretPathDescription);

/** A row's fields: those of the schemas its handlers check, described as there, each taking any value; and any other field. */
function accepting(...schemas: z.ZodObject[]) {
  const shape: Record<string, z.ZodOptional<z.ZodUnknown>> = {};
  for (const schema of schemas) {
    for (const [name, field] of Object.entries(schema.shape)) {
      if (name !== 'path')
        shape[name] ??= z
          .unknown()
          .optional()
          .describe((field as z.ZodType).description ?? '');
    }
  }
  return shape;
}
/** The fields of a row under a secret's path (`:path`). */
const rowFields = (...schemas: z.ZodObject[]) =>
  z
    .object({ path: typeString.pipe(z.string()).optional().describe(secretPathDescription), ...accepting(...schemas) })
    .catchall(z.unknown());

/** `undelete/` and `destroy/`: a change to each named version that exists, saved with the secret's metadata. */
async function changeVersions(
  request: Request,
  fields: typeof undeleteFields,
  change: (entry: VersionMetadata, version: number, secret: string) => void | Promise<void>,
) {
  const { path, versions } = parse(fields, request);
  const wanted = required(versions);
  const secret = secretPath(path);
  const metadata = await readMetadata(request.storage, secret);
  if (!metadata) return undefined;
  const updated = structuredClone(metadata);
  for (const version of wanted) {
    const entry = updated.versions[String(version)];
    if (entry) await change(entry, version, secret);
  }
  updated.updated_time = timestamp(request.system.clock.now());
  await saveMetadata(request.storage, secret, updated, metadata);
  return undefined;
}

const versionsField = z
  .union([
    z.array(z.union([z.number().int().positive(), typeString.pipe(z.string().regex(/^\d+$/).transform(Number))])),
    typeString.pipe(z.string()),
  ])
  .transform((value) =>
    Array.isArray(value)
      ? value
      : value
          .split(',')
          .filter((item) => item.trim() !== '')
          .map((item) => Number(item.trim())),
  )
  .refine(
    (list) => list.every((version) => Number.isInteger(version) && version > 0),
    'versions are positive integers',
  );
const versionsFields = (description: string) =>
  z.object({ path: secretPathField, versions: versionsField.optional().describe(description) });
const deleteFields = versionsFields(
  'The versions to be archived (a list, or numbers separated by commas). The versioned data will not be deleted, but it will no longer be returned in normal get requests.',
);
const undeleteFields = versionsFields(
  'The versions to unarchive. The versions will be restored and their data will be returned on normal get requests.',
);
const destroyFields = versionsFields('The versions to destroy. Their data will be permanently deleted.');
const customMetadata = typeKvPairs
  .pipe(z.record(z.string().min(1).max(128), z.string().max(512)))
  .refine((map) => Object.keys(map).length <= 64, 'at most 64 keys');
const settingsFields = {
  max_versions: count
    .optional()
    .describe("The number of versions to keep for each key; 0 uses the mount's setting, whose default is 10."),
  cas_required: bool.optional().describe('If true, every write must set the "cas" option (check-and-set).'),
  delete_version_after: duration
    .optional()
    .describe(
      'How long after its creation a version is deleted, as a Go duration ("1h30m") or seconds; 0 clears the setting.',
    ),
};
const configFields = z.object(settingsFields);
const versionField = count
  .optional()
  .describe('If provided during a read, the version to return; absent or 0, the current version.');
const readDataFields = z.object({ path: secretPathField, version: versionField });
const casOptions = typeMap
  .pipe(z.object({ cas: count.optional() }).catchall(z.unknown()))
  .optional()
  .describe(
    'Options for writing: "cas" makes it a check-and-set write. Unset, the write is allowed; 0, allowed only if the secret does not exist; N, allowed only if the current version is N.',
  );
const writeDataFields = z.object({
  path: secretPathField,
  data: z
    .record(z.string(), z.unknown(), { error: '"data" must be a JSON object of the secret\'s fields' })
    .optional()
    .describe(
      'The contents of the data map will be stored and returned on read. On a patch, the fields to change: null removes a field.',
    ),
  options: casOptions,
});
const patchDataFields = writeDataFields.extend({
  data: z
    .record(z.string(), z.unknown(), { error: '"data" must be a JSON object of the fields to change' })
    .optional()
    .describe('The fields to change, merged into the current version (JSON merge patch): null removes a field.'),
});
const subkeysFields = z.object({
  path: secretPathField,
  version: versionField,
  depth: count
    .default(0)
    .describe(
      'The deepest nesting level to show; 0 (the default) imposes no limit. Keys at that depth are shown as null even if they have sub-keys.',
    ),
});
const metadataFields = z.object({
  path: secretPathField,
  ...settingsFields,
  custom_metadata: customMetadata
    .optional()
    .describe(
      'User-provided key-value pairs that describe the secret, whatever its version: at most 64 keys of 128 bytes, values of 512.',
    ),
});

export const kvV2Paths: PathSpec[] = [
  path({
    pattern: 'config',
    fields: z.object(accepting(configFields)).catchall(z.unknown()),
    summaries: {
      read: "Read the engine's configuration: versions kept, check-and-set, automatic deletion of versions.",
      update: 'Configure the defaults of every secret: versions kept, check-and-set, automatic deletion of versions.',
    },
    operations: {
      read: async ({ storage }) => {
        const config = await readConfig(storage);
        return {
          data: {
            cas_required: config.cas_required,
            delete_version_after: goDuration(config.delete_version_after),
            max_versions: config.max_versions,
          },
        };
      },
      update: async (request) => {
        const changes = parse(configFields, request);
        const config = await readConfig(request.storage);
        await writeConfig(request.storage, {
          max_versions: changes.max_versions ?? config.max_versions,
          cas_required: changes.cas_required ?? config.cas_required,
          delete_version_after: changes.delete_version_after ?? config.delete_version_after,
        });
        return undefined;
      },
    },
  }),
  path({
    pattern: 'data/:path+',
    fields: rowFields(readDataFields, writeDataFields),
    summaries: {
      read: 'Read a version of a secret: the current one, or the one named by "version".',
      create: "Write a secret's data as its new version.",
      update: "Write a secret's data as its new version.",
      patch: 'Patch the current version of a secret (JSON merge patch) into a new version.',
      delete: 'Delete the current version of a secret; undelete restores it.',
    },
    exists: async (request) =>
      (await readMetadata(request.storage, secretPath(request.data.path)))?.current_version !== undefined,
    operations: {
      read: async (request) => {
        const { path, version } = parse(readDataFields, request);
        return readVersion(request, secretPath(path), version, (data) => ({ data }));
      },
      create: writeData,
      update: writeData,
      patch: patchData,
      delete: async (request) => {
        const path = secretPath(request.data.path);
        const metadata = await readMetadata(request.storage, path);
        if (metadata && metadata.current_version > 0)
          await markDeleted(request, path, metadata, [metadata.current_version]);
        return undefined;
      },
    },
  }),
  path({
    pattern: 'subkeys/:path+',
    fields: rowFields(subkeysFields),
    summaries: { read: 'Read the structure of a version of a secret: its keys, every value replaced by null.' },
    operations: {
      read: async (request) => {
        const { path, version, depth } = parse(subkeysFields, request);
        return readVersion(
          request,
          secretPath(path),
          version,
          (data) => ({ subkeys: subkeysOf(data, depth, 1) }),
          'subkeys',
        );
      },
    },
  }),
  path({
    pattern: 'metadata/:path*',
    fields: rowFields(metadataFields),
    summaries: {
      list: 'List the secrets and folders under a path.',
      read: "Read a secret's metadata: its settings, custom metadata and versions.",
      create: "Write a secret's settings and custom metadata.",
      update: "Write a secret's settings and custom metadata.",
      patch: 'Change the settings and custom metadata a patch names, of a secret that exists.',
      delete: "Delete a secret: its metadata and every version's data.",
    },
    exists: async (request) => (await readMetadata(request.storage, secretPath(request.data.path))) !== undefined,
    operations: {
      list: async ({ storage, data }) => ({ data: { keys: await listSecrets(storage, data.path ?? '') } }),
      read: async (request) => {
        const metadata = await readMetadata(request.storage, secretPath(request.data.path));
        return metadata ? { data: describeMetadata(metadata) } : undefined;
      },
      create: writeMetadata,
      update: writeMetadata,
      // The settings fields are merged either way: a patch of metadata is a write of the fields it names.
      patch: async (request) => {
        if (!(await readMetadata(request.storage, secretPath(request.data.path)))) throw notFound();
        return writeMetadata(request);
      },
      delete: async (request) => {
        await deleteSecret(request.storage, secretPath(request.data.path));
        return undefined;
      },
    },
  }),
  path({
    pattern: 'delete/:path+',
    fields: rowFields(deleteFields),
    summaries: { update: 'Delete versions of a secret (soft delete): their data stays, for undelete.' },
    operations: {
      update: async (request) => {
        const { path, versions } = parse(deleteFields, request);
        const metadata = await readMetadata(request.storage, secretPath(path));
        if (metadata) await markDeleted(request, secretPath(path), metadata, required(versions));
        else required(versions);
        return undefined;
      },
    },
  }),
  path({
    pattern: 'undelete/:path+',
    fields: rowFields(undeleteFields),
    summaries: { update: 'Undelete versions of a secret: their data is returned again.' },
    operations: {
      update: (request) =>
        changeVersions(request, undeleteFields, (entry) => {
          if (!entry.destroyed) entry.deletion_time = '';
        }),
    },
  }),
  path({
    pattern: 'destroy/:path+',
    fields: rowFields(destroyFields),
    summaries: { update: 'Destroy versions of a secret: their data is removed for good.' },
    operations: {
      update: (request) =>
        changeVersions(request, destroyFields, async (entry, version, secret) => {
          entry.destroyed = true;
          await destroyVersionData(request.storage, secret, version);
        }),
    },
  }),
];

function required(versions: number[] | undefined): number[] {
  if (!versions || versions.length === 0) throw badRequest('no version number provided');
  return versions;
}

async function writeData(request: Request): Promise<Reply> {
  const fields = parse(writeDataFields, request);
  if (fields.data === undefined) throw badRequest('no data provided');
  const path = secretPath(fields.path);
  const { version, metadata } = await writeVersion(request, path, fields.data, fields.options?.cas);
  return { data: versionReply(metadata, version) };
}

/**
 * `PATCH data/:path` (`application/merge-patch+json`): the current version with the patch merged in (RFC 7386: `null`
 * removes a field) becomes a new version. As in Vault, only a live current version can be patched.
 */
async function patchData(request: Request): Promise<Reply> {
  const fields = parse(patchDataFields, request);
  if (fields.data === undefined) throw badRequest('no data provided');
  const path = secretPath(fields.path);
  const metadata = await readMetadata(request.storage, path);
  const current = metadata?.versions[String(metadata.current_version)];
  if (!metadata || !current || current.destroyed || isDeleted(current, request.system.clock.now())) throw notFound();
  if (effective(metadata, await readConfig(request.storage)).casRequired && fields.options?.cas === undefined) {
    throw badRequest('check-and-set parameter required for this call');
  }
  const data = await readVersionData(request.storage, path, metadata.current_version);
  if (!data) throw notFound();
  const patched = mergePatch(data, fields.data) as Record<string, unknown>;
  const { version, metadata: after } = await writeVersion(
    request,
    path,
    patched,
    fields.options?.cas ?? metadata.current_version,
  );
  return { data: versionReply(after, version) };
}

/** RFC 7386 JSON merge patch. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const result: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

/** A version's data, or Vault's 404 that still shows the metadata of a version deleted or destroyed. */
async function readVersion(
  request: Request,
  path: string,
  wanted: number | undefined,
  shape: (data: Record<string, unknown>) => Record<string, unknown>,
  field = 'data',
): Promise<Reply | undefined> {
  const metadata = await readMetadata(request.storage, path);
  if (!metadata) return undefined;
  const version = wanted && wanted > 0 ? wanted : metadata.current_version;
  const entry = metadata.versions[String(version)];
  if (!entry) return undefined;
  const versionMetadata = versionReply(metadata, version);
  if (entry.destroyed || isDeleted(entry, request.system.clock.now())) {
    return { data: { [field]: null, metadata: versionMetadata }, status: 404 };
  }
  const data = await readVersionData(request.storage, path, version);
  if (!data) return undefined;
  return { data: { ...shape(data), metadata: versionMetadata } };
}

async function markDeleted(
  request: Request,
  path: string,
  metadata: SecretMetadata,
  versions: number[],
): Promise<void> {
  const updated = structuredClone(metadata);
  const now = request.system.clock.now();
  for (const version of versions) {
    const entry = updated.versions[String(version)];
    if (entry && !entry.destroyed && !isDeleted(entry, now)) entry.deletion_time = timestamp(now);
  }
  updated.updated_time = timestamp(now);
  await saveMetadata(request.storage, path, updated, metadata);
}

async function writeMetadata(request: Request): Promise<undefined> {
  const fields = parse(metadataFields, request);
  const path = secretPath(fields.path);
  const before = await readMetadata(request.storage, path);
  const now = timestamp(request.system.clock.now());
  const metadata = structuredClone(before) ?? newMetadata(now);
  if (fields.max_versions !== undefined) metadata.max_versions = fields.max_versions;
  if (fields.cas_required !== undefined) metadata.cas_required = fields.cas_required;
  if (fields.delete_version_after !== undefined) metadata.delete_version_after = fields.delete_version_after;
  if (fields.custom_metadata !== undefined) metadata.custom_metadata = fields.custom_metadata;
  metadata.updated_time = now;
  await saveMetadata(request.storage, path, metadata, before);
  return undefined;
}

function describeMetadata(metadata: SecretMetadata): Record<string, unknown> {
  return {
    cas_required: metadata.cas_required,
    created_time: metadata.created_time,
    current_version: metadata.current_version,
    custom_metadata: metadata.custom_metadata,
    delete_version_after: goDuration(metadata.delete_version_after),
    max_versions: metadata.max_versions,
    oldest_version: metadata.oldest_version,
    updated_time: metadata.updated_time,
    versions: metadata.versions,
  };
}

/** Vault's `subkeys`: the secret's structure with every leaf value replaced by null, down to `depth` (0: all). */
function subkeysOf(value: Record<string, unknown>, depth: number, level: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    const nested =
      child !== null && typeof child === 'object' && !Array.isArray(child) && Object.keys(child).length > 0;
    out[key] =
      nested && (depth === 0 || level < depth) ? subkeysOf(child as Record<string, unknown>, depth, level + 1) : null;
  }
  return out;
}
