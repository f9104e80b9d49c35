import { epochSeconds } from '../../../lib/clock.ts';
import type { SecretsServices } from '../../framework/services.ts';
import { storageFor, systemFor } from '../../framework/system.ts';
import { rollBackDue } from '../../framework/write-ahead.ts';
import { configKey, loadConfig } from './config.ts';
import type { EngineContext } from './engine-context.ts';
import { rotateRootNow } from './rotate-root.ts';
import { cloudRollback } from './wal.ts';

export { leasedKeyDelay } from './wal.ts';

/** Rotates the root credentials of every cloud mount whose automatic rotation is due; a failure retries in a minute. */
export async function rotateDueRoots(core: SecretsServices): Promise<{ rotated: number }> {
  const result = { rotated: 0 };
  const now = epochSeconds(core.clock);
  for (const mount of await core.mounts.list()) {
    if (mount.type !== 'cloud') continue;
    const storage = storageFor(core, mount);
    const config = await loadConfig(storage);
    if (config?.rotateAt === undefined || config.rotateAt > now || !config.credentials) continue;
    const ctx: EngineContext = { system: systemFor(core, mount), mount, storage };
    try {
      await rotateRootNow(ctx);
      result.rotated++;
    } catch (error) {
      core.log.error('automatic root rotation failed; will retry', {
        mount: mount.path,
        error: (error as Error).message,
      });
      await storage.update(configKey, { set: { rotateAt: now + 60 } }).catch(() => undefined);
    }
  }
  return result;
}

/**
 * The engine's whole scheduled work, once: every due write-ahead record of every cloud mount rolled back (the
 * framework's `rollBackDue` with `cloudRollback`; failures retried with backoff, 30 s doubling, at most an hour),
 * then the root rotations that are due.
 */
export async function cleanupPending(
  core: SecretsServices,
): Promise<{ settled: number; failed: number; rotated: number }> {
  const records = await rollBackDue(core, 'cloud', cloudRollback.forMount, 'cloud clean-up');
  const roots = await rotateDueRoots(core);
  return { settled: records.settled, failed: records.failed, rotated: roots.rotated };
}
