import { ConditionFailed } from '../../../storage/store.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import { metadataKey, newMetadata, timestamp, versionKey } from './kv-v2-store.ts';

const upgradedKey = 'kv2/upgraded';
/** Mounts this process has seen upgraded (or born versioned): no read needed for them. */
const upgradedMounts = new Set<string>();

/**
 * Before a version 2 request: a mount tuned from version 1 to 2 (`options.version` through `sys/mounts/:path/tune`)
 * has its secrets upgraded first, as Vault's kv plugin does when it starts on such a mount: each becomes version 1
 * of a versioned secret at the same path, sealed again under its new key. Each secret moves in one transaction, so
 * two processes upgrading at once, or an upgrade cut short, leave every secret in exactly one of the two layouts.
 */
export async function ensureUpgraded(storage: MountStorage, mountUuid: string, now: number): Promise<void> {
  if (upgradedMounts.has(mountUuid)) return;
  if (!(await storage.get(upgradedKey))) {
    if (!(await upgradeKvToV2(storage, now))) return; // something moved under it: the next request looks again
    await storage.put(upgradedKey, { at: now });
  }
  upgradedMounts.add(mountUuid);
}

/** Whether every version 1 secret was moved by this call or found moved. */
async function upgradeKvToV2(storage: MountStorage, now: number): Promise<boolean> {
  const created = timestamp(now);
  let complete = true;
  for (const item of await storage.items('')) {
    if (item.sk.startsWith('kv2/')) continue;
    const sealed = (item.value as { sealed?: string } | undefined)?.sealed;
    if (typeof sealed !== 'string') continue;
    const plaintext = storage.open(item.sk, sealed);
    const key = versionKey(item.sk, 1);
    const metadata = { ...newMetadata(created), current_version: 1, oldest_version: 1 };
    metadata.versions['1'] = { created_time: created, deletion_time: '', destroyed: false };
    const moved = storage.transact([
      { put: key, item: { value: { sealed: storage.seal(key, plaintext) } } },
      { put: metadataKey(item.sk), item: { value: metadata }, when: { absent: true } },
      // The version 1 item is moved only as it was read: a concurrent rewrite is not lost, the next request moves it.
      { delete: item.sk, when: { equals: { value: item.value } } },
    ]);
    // Another process moved it first, or a version 1 write (routed by a mount table cached before the tune) changed it.
    await moved.catch((error) => {
      if (!(error instanceof ConditionFailed)) throw error;
      complete = false;
    });
  }
  return complete;
}
