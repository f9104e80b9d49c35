import type { MountStorage } from '../../mounts/mount-storage.ts';
import { destroyVersionData, metadataKey, readMetadata } from './kv-v2-store.ts';

/** `LIST metadata/<prefix>`: the secrets and folders directly under the prefix. */
export async function listSecrets(storage: MountStorage, prefix: string): Promise<string[]> {
  const folder = prefix.replace(/^\/+/, '').replace(/\/+$/, '');
  return storage.list(metadataKey(folder === '' ? '' : `${folder}/`));
}

/** `DELETE metadata/<path>`: every version's data, then the metadata. */
export async function deleteSecret(storage: MountStorage, path: string): Promise<void> {
  const metadata = await readMetadata(storage, path);
  if (!metadata) return;
  for (const version of Object.keys(metadata.versions)) await destroyVersionData(storage, path, Number(version));
  await storage.delete(metadataKey(path));
}
