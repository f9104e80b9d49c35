import { api, secrets, segments } from '../api.ts';
import { apiPath } from './paths.ts';

/** A kv mount as `sys/internal/ui/mounts/<path>` describes it, and the API paths of its secrets by version. */
export interface KvMount {
  path: string;
  type: string;
  version: 1 | 2;
}

/** The mount that serves a console path (the longest mount prefix), its type and kv version. */
export async function resolveMount(path: string): Promise<KvMount> {
  const answer = await secrets<{ data: { path: string; type: string; options?: Record<string, string> | null } }>(
    'GET',
    api`sys/internal/ui/mounts/${segments(path)}`,
  );
  const { data } = answer;
  return { path: data.path, type: data.type, version: data.options?.version === '2' ? 2 : 1 };
}

const under = (mount: KvMount, kind: string, path: string) =>
  apiPath(`${mount.path}${mount.version === 2 ? `${kind}/` : ''}${path}`);

export const kvListPath = (mount: KvMount, folder: string) =>
  `${mount.path}${mount.version === 2 ? 'metadata/' : ''}${folder}`;
export const kvDataPath = (mount: KvMount, path: string) => under(mount, 'data', path);
export const kvMetadataPath = (mount: KvMount, path: string) => apiPath(`${mount.path}metadata/${path}`);
export const kvVersionsPath = (mount: KvMount, action: 'delete' | 'undelete' | 'destroy', path: string) =>
  apiPath(`${mount.path}${action}/${path}`);

/** kv v2 metadata as the API answers it. */
export interface KvMetadata {
  current_version: number;
  oldest_version: number;
  max_versions: number;
  cas_required: boolean;
  delete_version_after: string;
  custom_metadata: Record<string, string> | null;
  created_time: string;
  updated_time: string;
  versions: Record<string, { created_time: string; deletion_time: string; destroyed: boolean }>;
}

/** The console address of a kv path (`folder/` or `secret`) with an optional query. */
export const kvHref = (mountPath: string, path: string, query = ''): string =>
  `/ui/vault/secrets/${apiPath(`${mountPath}${path}`)}${query ? `?${query}` : ''}`;

/** One version's own metadata, as a data read answers it. */
export interface KvVersionInfo {
  version: number;
  created_time: string;
  deletion_time: string;
  destroyed: boolean;
  custom_metadata?: Record<string, string> | null;
}

export const isDeleted = (entry: { deletion_time: string; destroyed: boolean }): boolean =>
  !entry.destroyed && !!entry.deletion_time && Date.parse(entry.deletion_time) <= Date.now();
