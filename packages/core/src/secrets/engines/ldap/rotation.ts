import { epochSeconds } from '../../../lib/clock.ts';
import { dueInPartition, dueKey } from '../../../storage/due.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import type { SecretsServices } from '../../framework/services.ts';
import { messageOf } from './client.ts';
import { configKey, directoryConfig, loadConfigItem } from './config-model.ts';
import { jobContext, type LdapEngineContext } from './context.ts';
import { settleLibraryClaim } from './library-checkouts.ts';
import { accountKey } from './library-model.ts';
import { type LdapAccountItem, rotationQueue } from './records.ts';
import { rotateRoot } from './rotate-root.ts';
import { retryAt } from './rotation-schedule.ts';
import { rotateStaticRole, staticRoleKeyPrefix } from './static-rotation.ts';
import { RotationInProgress } from './write-ahead.ts';

/**
 * The rotation job: rotates every root credential and static role whose time has come (the `due` index,
 * queue `ldap-rotation`). A failed rotation keeps the old password and is retried with backoff; the jobs
 * call this every few seconds, so rotations land within seconds of their time.
 */
export async function rotateDue(core: SecretsServices, limit = 200): Promise<{ rotated: number; failed: number }> {
  const result = { rotated: 0, failed: 0 };
  for (const item of await dueRotations(core, limit)) {
    const mount = await core.mounts.byUuid(item.pk.slice('mount#'.length));
    if (!mount) {
      core.log.error('a rotation is due for a mount that no longer exists; skipped', { key: item.sk });
      continue;
    }
    const context = jobContext(core, mount);
    try {
      if (item.sk === configKey) await rotateRoot(context);
      else if (item.sk.startsWith(staticRoleKeyPrefix))
        await rotateStaticRole(context, item.sk.slice(staticRoleKeyPrefix.length));
      // A check-out's claim at its deadline: returned if its lease was never registered (library-checkouts.ts).
      else if (item.sk.startsWith(accountKey(''))) await settleLibraryClaim(context, mount.path, item.sk);
      else continue;
      result.rotated++;
    } catch (error) {
      result.failed++;
      core.log.error('automatic rotation failed; will retry', {
        key: item.sk,
        error: messageOf(error),
      });
      await retryLater(context, item, error instanceof RotationInProgress);
    }
  }
  return result;
}

/** The queue's items due by now, across every mount: the one query of this engine that reads the table itself. */
async function dueRotations(core: SecretsServices, limit: number): Promise<LdapAccountItem[]> {
  return (await dueInPartition(core, rotationQueue, limit)) as LdapAccountItem[];
}

async function retryLater(context: LdapEngineContext, seen: LdapAccountItem, inProgress: boolean): Promise<void> {
  const { storage, system } = context;
  const now = epochSeconds(system.clock);
  const attempts = (seen.attempts ?? 0) + 1;
  let window: Parameters<typeof retryAt>[2];
  if (seen.sk === configKey) {
    const config = await loadConfigItem(storage);
    if (config)
      window = {
        fields: directoryConfig(storage, config).fields,
        scheduledAt: seen.scheduledAt ?? seen.dueAt ?? now,
      };
  }
  const next = inProgress ? { at: Math.max(seen.pendingUntil ?? now, now) + 1 } : retryAt(now, attempts, window);
  try {
    // Only if nobody rescheduled it meanwhile (a rotation that succeeded elsewhere).
    await storage.update(
      seen.sk,
      {
        set: {
          dueSk: dueKey(next.at, `${context.partition}|${seen.sk}`),
          dueAt: next.at,
          attempts,
          ...(next.scheduledAt ? { scheduledAt: next.scheduledAt } : {}),
        },
      },
      { when: { equals: { dueSk: seen.dueSk } } },
    );
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}
