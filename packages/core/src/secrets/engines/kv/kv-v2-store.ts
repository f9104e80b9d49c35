import { badRequest } from '../../../lib/errors.ts';
import { type Condition, ConditionFailed } from '../../../storage/store.ts';
import type { Request } from '../../framework/backend.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';

/**
 * kv version 2 in the mount's storage, as Vault's versioned key/value store keeps it: one metadata item per secret
 * (`kv2/meta/<path>`: its versions, their creation and deletion times, its settings) and one sealed item per version
 * (`kv2/version/<path>/<n>`). Every write of a version and its metadata is one transaction conditioned on the
 * metadata's `current_version`, so check-and-set holds across processes.
 */

export interface VersionMetadata {
  created_time: string;
  deletion_time: string;
  destroyed: boolean;
}

export interface SecretMetadata {
  versions: Record<string, VersionMetadata>;
  current_version: number;
  oldest_version: number;
  max_versions: number;
  cas_required: boolean;
  /** Seconds; 0 = never. */
  delete_version_after: number;
  custom_metadata: Record<string, string> | null;
  created_time: string;
  updated_time: string;
}

export interface KvConfig {
  max_versions: number;
  cas_required: boolean;
  delete_version_after: number;
}

export const defaultMaxVersions = 10;
const configKey = 'kv2/config';
export const metadataKey = (path: string) => `kv2/meta/${path}`;
export const versionKey = (path: string, version: number) => `kv2/version/${path}/${version}`;

/** A secret's path as the URL gives it: no leading or trailing slashes. */
export function secretPath(raw: string | undefined): string {
  const path = (raw ?? '').replace(/^\/+/, '').replace(/\/+$/, '');
  if (path === '') throw badRequest('missing path: name the secret, e.g. data/my-app');
  return path;
}

export async function readConfig(storage: MountStorage): Promise<KvConfig> {
  const stored = await storage.get<KvConfig>(configKey);
  return {
    max_versions: stored?.max_versions ?? 0,
    cas_required: stored?.cas_required ?? false,
    delete_version_after: stored?.delete_version_after ?? 0,
  };
}

export async function writeConfig(storage: MountStorage, config: KvConfig): Promise<void> {
  await storage.put(configKey, { ...config });
}

export const readMetadata = (storage: MountStorage, path: string) => storage.get<SecretMetadata>(metadataKey(path));

export function newMetadata(now: string): SecretMetadata {
  return {
    versions: {},
    current_version: 0,
    oldest_version: 0,
    max_versions: 0,
    cas_required: false,
    delete_version_after: 0,
    custom_metadata: null,
    created_time: now,
    updated_time: now,
  };
}

/** Writes the metadata only if nobody changed it since it was read (`expected` is the version count then, or absent). */
export async function saveMetadata(
  storage: MountStorage,
  path: string,
  metadata: SecretMetadata,
  expected: SecretMetadata | undefined,
): Promise<void> {
  try {
    await storage.putItem(metadataKey(path), { value: metadata }, { when: unchangedSince(expected) });
  } catch (error) {
    if (error instanceof ConditionFailed)
      throw badRequest('the secret was changed by another request at the same time; try again');
    throw error;
  }
}

/** The metadata as it was read: absent, or with the same update time and current version. */
function unchangedSince(expected: SecretMetadata | undefined): Condition {
  if (!expected) return { absent: true };
  return { equals: { 'value.updated_time': expected.updated_time, 'value.current_version': expected.current_version } };
}

/** The effective limits for a secret: its own when set, else the mount's. */
export function effective(metadata: SecretMetadata, config: KvConfig) {
  const maxVersions =
    metadata.max_versions > 0
      ? metadata.max_versions
      : config.max_versions > 0
        ? config.max_versions
        : defaultMaxVersions;
  const deleteAfter = metadata.delete_version_after > 0 ? metadata.delete_version_after : config.delete_version_after;
  return { maxVersions, deleteAfter, casRequired: metadata.cas_required || config.cas_required };
}

/**
 * Adds a version (check-and-set as Vault: `cas` 0 only creates, `cas` N only follows version N) and trims the oldest
 * ones beyond `max_versions`. Returns the new version's metadata and number.
 */
export async function writeVersion(
  request: Request,
  path: string,
  secret: Record<string, unknown>,
  cas: number | undefined,
): Promise<{ version: number; metadata: SecretMetadata }> {
  const { storage } = request;
  const config = await readConfig(storage);
  const before = await readMetadata(storage, path);
  const now = timestamp(request.system.clock.now());
  const metadata: SecretMetadata = structuredClone(before) ?? newMetadata(now);
  const { maxVersions, deleteAfter, casRequired } = effective(metadata, config);
  if (casRequired && cas === undefined) throw badRequest('check-and-set parameter required for this call');
  if (cas !== undefined && cas !== metadata.current_version)
    throw badRequest('check-and-set parameter did not match the current version');
  const version = metadata.current_version + 1;
  metadata.versions[String(version)] = {
    created_time: now,
    deletion_time: deleteAfter > 0 ? timestamp(request.system.clock.now() + deleteAfter * 1000) : '',
    destroyed: false,
  };
  metadata.current_version = version;
  if (metadata.oldest_version === 0) metadata.oldest_version = version;
  metadata.updated_time = now;
  const trimmed = trimTo(metadata, maxVersions);
  const key = versionKey(path, version);
  try {
    await storage.transact([
      { put: key, item: { value: { sealed: storage.seal(key, JSON.stringify(secret)) } } },
      { put: metadataKey(path), item: { value: metadata }, when: unchangedSince(before) },
      ...trimmed.map((old) => ({ delete: versionKey(path, old) })),
    ]);
  } catch (error) {
    if (error instanceof ConditionFailed) throw badRequest('check-and-set parameter did not match the current version');
    throw error;
  }
  return { version, metadata };
}

/** Drops the oldest versions beyond `max`; returns their numbers (their data is deleted with the write). */
export function trimTo(metadata: SecretMetadata, max: number): number[] {
  const numbers = Object.keys(metadata.versions)
    .map(Number)
    .sort((a, b) => a - b);
  const dropped = numbers.slice(0, Math.max(0, numbers.length - max));
  for (const old of dropped) delete metadata.versions[String(old)];
  const remaining = numbers.slice(dropped.length);
  metadata.oldest_version = remaining[0] ?? 0;
  return dropped;
}

export async function readVersionData(
  storage: MountStorage,
  path: string,
  version: number,
): Promise<Record<string, unknown> | undefined> {
  const key = versionKey(path, version);
  const stored = await storage.get<{ sealed: string }>(key);
  return stored && (JSON.parse(storage.open(key, stored.sealed)) as Record<string, unknown>);
}

export async function destroyVersionData(storage: MountStorage, path: string, version: number): Promise<void> {
  await storage.delete(versionKey(path, version));
}

/** Deleted: soft-deleted by hand, or past its `delete_version_after`. */
export function isDeleted(version: VersionMetadata, now: number): boolean {
  return version.deletion_time !== '' && Date.parse(version.deletion_time) <= now;
}

export const timestamp = (ms: number) => new Date(ms).toISOString();

/** As Vault's version metadata in replies: the version and the secret's custom metadata with it. */
export function versionReply(metadata: SecretMetadata, version: number) {
  const entry = metadata.versions[String(version)];
  return {
    created_time: entry?.created_time ?? '',
    custom_metadata: metadata.custom_metadata,
    deletion_time: entry?.deletion_time ?? '',
    destroyed: entry?.destroyed ?? false,
    version,
  };
}

/** Vault's duration strings for `delete_version_after`: `0s`, `1h0m0s`. */
export function goDuration(seconds: number): string {
  if (seconds <= 0) return '0s';
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = seconds % 60;
  if (hours > 0) return `${hours}h${minutes}m${rest}s`;
  if (minutes > 0) return `${minutes}m${rest}s`;
  return `${rest}s`;
}
