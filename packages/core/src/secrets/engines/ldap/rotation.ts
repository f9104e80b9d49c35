import type { Core } from '../../../core.ts';
import { epochSeconds } from '../../../lib/clock.ts';
import { dueKey } from '../../../storage/due.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import { MountStorage } from '../../mounts/mount-storage.ts';
import { messageOf } from './client.ts';
import { configKey, directoryConfig, loadConfigItem } from './config-model.ts';
import { type AccountItem, rotationQueue } from './records.ts';
import { rotateRoot } from './rotate-root.ts';
import { retryAt } from './rotation-schedule.ts';
import { rotateStaticRole, staticRoleKeyPrefix } from './static-rotation.ts';
import { RotationInProgress } from './write-ahead.ts';

/**
 * The rotation job: rotates every root credential and static role whose time has come (the `due` index,
 * queue `ldap-rotation`). A failed rotation keeps the old password and is retried with backoff; the jobs
 * call this every few seconds, so rotations land within seconds of their time.
 */
export async function rotateDue(core: Core, limit = 200): Promise<{ rotated: number; failed: number }> {
  const now = epochSeconds(core.clock);
  const due = await core.store.query<AccountItem>({
    IndexName: 'due',
    KeyConditionExpression: 'duePk = :queue AND dueSk <= :now',
    ExpressionAttributeValues: { ':queue': rotationQueue, ':now': dueKey(now, '~') },
    Limit: limit,
  });
  const result = { rotated: 0, failed: 0 };
  for (const item of due.slice(0, limit)) {
    const storage = new MountStorage(core.store, core.keyring, item.pk.slice('mount#'.length));
    try {
      if (item.sk === configKey) await rotateRoot(core, storage);
      else if (item.sk.startsWith(staticRoleKeyPrefix)) await rotateStaticRole(core, storage, item.sk.slice(staticRoleKeyPrefix.length));
      else continue;
      result.rotated++;
    } catch (error) {
      result.failed++;
      core.log.error('automatic rotation failed; will retry', { key: item.sk, error: messageOf(error) });
      await retryLater(core, storage, item, error instanceof RotationInProgress);
    }
  }
  return result;
}

async function retryLater(core: Core, storage: MountStorage, seen: AccountItem, inProgress: boolean): Promise<void> {
  const now = epochSeconds(core.clock);
  const attempts = (seen.attempts ?? 0) + 1;
  let window: Parameters<typeof retryAt>[2];
  if (seen.sk === configKey) {
    const config = await loadConfigItem(storage);
    if (config) window = { fields: directoryConfig(storage, config).fields, scheduledAt: seen.scheduledAt ?? seen.dueAt ?? now };
  }
  const next = inProgress ? { at: Math.max(seen.pendingUntil ?? now, now) + 1 } : retryAt(now, attempts, window);
  try {
    // Only if nobody rescheduled it meanwhile (a rotation that succeeded elsewhere).
    await core.store.update({
      Key: { pk: seen.pk, sk: seen.sk },
      UpdateExpression: `SET dueSk = :due, dueAt = :at, attempts = :attempts${next.scheduledAt ? ', scheduledAt = :scheduled' : ''}`,
      ConditionExpression: 'dueSk = :seen',
      ExpressionAttributeValues: {
        ':due': dueKey(next.at, `${seen.pk}|${seen.sk}`),
        ':at': next.at,
        ':attempts': attempts,
        ':seen': seen.dueSk,
        ...(next.scheduledAt ? { ':scheduled': next.scheduledAt } : {}),
      },
    });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}
