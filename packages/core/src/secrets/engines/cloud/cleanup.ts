import { epochSeconds } from '../../../lib/clock.ts';
import type { Core } from '../../framework/services.ts';
import { storageFor, systemFor } from '../../framework/system.ts';
import { configKey, loadConfig } from './config.ts';
import type { EngineContext } from './engine-context.ts';
import type { GoogleClient } from './google-client.ts';
import { attributesOf, type WalItem, walPrefix } from './records.ts';
import { rootClient } from './root-client.ts';
import { rotateRootNow } from './rotate-root.ts';
import { settle } from './wal.ts';

export { leasedKeyDelay } from './wal.ts';

/**
 * The job: settles every due write-ahead record of every cloud mount, and rotates root credentials whose
 * automatic rotation is due. Failures are retried with backoff (30 s doubling, at most an hour).
 */
export async function cleanupPending(core: Core): Promise<{ settled: number; failed: number; rotated: number }> {
  const result = { settled: 0, failed: 0, rotated: 0 };
  const now = epochSeconds(core.clock);
  for (const mount of await core.mounts.list()) {
    if (mount.type !== 'cloud') continue;
    const storage = storageFor(core, mount);
    const ctx: EngineContext = { system: systemFor(core, mount), mount, storage };
    const due = (await storage.items<Omit<WalItem, 'sk'>>(walPrefix)).filter((item) => item.dueAt <= now);
    let google: GoogleClient | undefined;
    for (const item of due) {
      try {
        google ??= await rootClient(ctx);
        await settle(ctx, google, item);
        await storage.delete(item.sk);
        result.settled++;
      } catch (error) {
        result.failed++;
        const attempts = (item.attempts ?? 0) + 1;
        core.log.error('cloud clean-up failed; will retry', { kind: item.kind, attempts, error: (error as Error).message });
        await storage.putItem(item.sk, attributesOf({ ...item, attempts, dueAt: now + Math.min(30 * 2 ** (attempts - 1), 3600) }));
      }
    }
    const config = await loadConfig(storage);
    if (config?.rotateAt !== undefined && config.rotateAt <= now && config.credentials) {
      try {
        await rotateRootNow(ctx);
        result.rotated++;
      } catch (error) {
        core.log.error('automatic root rotation failed; will retry', { mount: mount.path, error: (error as Error).message });
        await storage.update(configKey, { set: { rotateAt: now + 60 } }).catch(() => undefined);
      }
    }
  }
  return result;
}
