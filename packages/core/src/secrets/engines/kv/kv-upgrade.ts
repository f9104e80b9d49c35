import type { MountStorage } from '../../mounts/mount-storage.ts';
import { metadataKey, newMetadata, timestamp, versionKey } from './kv-v2-store.ts';

/**
 * Upgrading a `kv` mount from version 1 to 2 (`options.version` through `sys/mounts/:path/tune`), as Vault does: each
 * secret becomes version 1 of a versioned secret at the same path, sealed again under its new key.
 */
export async function upgradeKvToV2(storage: MountStorage, now: number): Promise<void> {
  const created = timestamp(now);
  for (const item of await storage.all()) {
    if (item.sk.startsWith('kv2/')) continue;
    const sealed = (item.value as { sealed?: string } | undefined)?.sealed;
    if (typeof sealed !== 'string') continue;
    const plaintext = storage.open(item.sk, sealed);
    const key = versionKey(item.sk, 1);
    const metadata = { ...newMetadata(created), current_version: 1, oldest_version: 1 };
    metadata.versions['1'] = { created_time: created, deletion_time: '', destroyed: false };
    await storage.store.transact([
      { Put: { Item: { pk: storage.pk, sk: key, value: { sealed: storage.seal(key, plaintext) } } } },
      { Put: { Item: { pk: storage.pk, sk: metadataKey(item.sk), value: metadata }, ConditionExpression: 'attribute_not_exists(pk)' } },
      { Delete: { Key: { pk: storage.pk, sk: item.sk } } },
    ]);
  }
}
