import { setTimeout as sleep } from 'node:timers/promises';
import { epochSeconds } from '../../../lib/clock.ts';
import { uuid } from '../../../lib/random.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import type { SecretsServices } from '../../framework/services.ts';
import { storageFor } from '../../framework/system.ts';
import type { MountEntry } from '../../mounts/mount-table.ts';
import { type HealReason, healAccount, verifyStored } from './account-heal.ts';
import { messageOf } from './client.ts';
import { type DirectoryConfig, loadConfigItem } from './config-model.ts';
import { jobContext } from './context.ts';
import { accountKey } from './library-model.ts';
import { checkCursorKey, type LdapAccountItem } from './records.ts';
import { staticRoleKeyPrefix } from './static-rotation.ts';
import { requireDirectoryConfig } from './write-ahead.ts';

/**
 * The directory engine's account check: every static role and library account of every mount, one bind each with its
 * stored password, paced (`KEYHAVEN_LDAP_CHECK_PER_SECOND` binds a second at most) and repeated every
 * `KEYHAVEN_LDAP_CHECK_SECONDS` (jittered by ±25%, so mounts and stages do not fall in step); an account the directory
 * no longer takes is healed (`account-heal.ts`). A pass falls due at once when the process starts locally (the
 * job's `start`) and after a restore (`functions/deploy/restore-table.ts` leaves out items marked `droppedOnRestore`,
 * as the cursor is, and a missing cursor is a pass due now).
 *
 * Where a pass stands is one item per mount (`checkCursorKey`): when the next run is due, and the last account
 * checked. A run claims it with a conditional write, so two processes never check the same accounts at once, and a
 * process that dies mid-run leaves it to the next run after `claimSlackSeconds`.
 */

type Cursor = {
  /** Epoch seconds when the next run may start. */
  nextAt: number;
  /** The key of the last account checked in the pass under way (absent: a new pass starts at the first). */
  after?: string;
  /** The run that holds it. */
  runId?: string;
};

export interface CheckSettings {
  /** Seconds between passes (before jitter); 0 turns the scheduled check off (start and restore checks stay). */
  intervalSeconds: number;
  /** Binds a second at most, per mount and process. */
  perSecond: number;
}

/** How long a run holds the cursor beyond its paced length, before another process may take it over. */
const claimSlackSeconds = 30;

/** The settings from the server's environment; a malformed value is an error naming it (the job logs it). */
export function checkSettings(env: NodeJS.ProcessEnv = process.env): CheckSettings {
  const number = (name: string, fallback: number, ok: (value: number) => boolean, rule: string) => {
    const text = env[name];
    if (text === undefined || text === '') return fallback;
    const value = Number(text);
    if (!Number.isFinite(value) || !ok(value)) throw new RangeError(`${name} must be ${rule}, not "${text}"`);
    return value;
  };
  return {
    intervalSeconds: number(
      'KEYHAVEN_LDAP_CHECK_SECONDS',
      900,
      (value) => Number.isInteger(value) && value >= 0,
      'a whole number of seconds (0 turns the scheduled check off)',
    ),
    perSecond: number(
      'KEYHAVEN_LDAP_CHECK_PER_SECOND',
      5,
      (value) => value > 0 && value <= 1000,
      'a number of binds per second above 0 and at most 1000',
    ),
  };
}

/** The job's cadence: how often it looks for a due pass, and the length of a run's share of one (its bind budget). */
export const checkEverySeconds = 5;

/**
 * One run over every mount whose check is due: the accounts it healed (its work done, as a rotation job counts
 * rotations) and the checks or heals that failed (the next pass tries again); how many it checked is in its log line.
 */
export async function checkAccounts(
  core: SecretsServices,
  settings: CheckSettings = checkSettings(),
): Promise<{ done: number; failed: number }> {
  const result = { done: 0, failed: 0 };
  for (const mount of await core.mounts.list('secret')) {
    if (mount.type !== 'ldap') continue;
    const { healed, failed } = await checkMount(core, mount, settings);
    result.done += healed;
    result.failed += failed;
  }
  return result;
}

/** The job's `start`: every mount's check falls due now (its cursor goes; a missing cursor is a pass due now). */
export async function checkAccountsSoon(core: SecretsServices): Promise<void> {
  for (const mount of await core.mounts.list('secret'))
    if (mount.type === 'ldap') await storageFor(core, mount).delete(checkCursorKey);
}

async function checkMount(
  core: SecretsServices,
  mount: MountEntry,
  settings: CheckSettings,
): Promise<{ healed: number; failed: number }> {
  const context = jobContext(core, mount);
  const { storage, system } = context;
  const now = epochSeconds(system.clock);
  const cursor = await storage.getItem<Cursor>(checkCursorKey);
  if (cursor && cursor.nextAt > now) return { healed: 0, failed: 0 };
  // A pass is a scheduled one unless it starts with no cursor (a start, a restore, a new mount).
  const reason: HealReason = cursor ? 'scheduled check' : 'start check';
  const budget = Math.max(1, Math.floor(settings.perSecond * checkEverySeconds));
  const runId = uuid();
  try {
    // The run's claim: only over the cursor as read (or where none is), so of two processes one runs.
    await storage.putItem(
      checkCursorKey,
      {
        nextAt: now + Math.ceil(budget / settings.perSecond) + claimSlackSeconds,
        runId,
        ...(cursor?.after ? { after: cursor.after } : {}),
        // A restore leaves it out (functions/deploy/restore-table.ts): the pass then falls due at once.
        droppedOnRestore: true,
      },
      {
        when: !cursor
          ? { absent: true }
          : cursor.runId
            ? { equals: { nextAt: cursor.nextAt, runId: cursor.runId } }
            : { equals: { nextAt: cursor.nextAt }, missing: ['runId'] },
      },
    );
  } catch (error) {
    if (error instanceof ConditionFailed) return { healed: 0, failed: 0 };
    throw error;
  }

  // The root credential as the directory takes it: a root rotation the directory took but the table never recorded
  // is recorded first (requireDirectoryConfig), so a heal does not take the old one for a root that cannot bind.
  const config = (await loadConfigItem(storage)) ? await requireDirectoryConfig(context) : undefined;
  const accounts = config
    ? [
        ...(await storage.items<LdapAccountItem>(staticRoleKeyPrefix)),
        ...(await storage.items<LdapAccountItem>(accountKey(''))),
      ]
        .filter((item) => !cursor?.after || item.sk > cursor.after)
        .sort((a, b) => (a.sk < b.sk ? -1 : 1))
    : [];
  const batch = accounts.slice(0, budget);
  const counts = { checked: 0, failed: 0, dead: 0, healed: 0, notHealed: 0 };
  let rootRefused = false;
  for (const [index, item] of batch.entries()) {
    if (index > 0) await sleep(1000 / settings.perSecond);
    try {
      const found = await verifyStored(context, config as DirectoryConfig, item);
      counts.checked++;
      if (found !== 'dead') continue;
      counts.dead++;
      if (rootRefused) {
        counts.notHealed++;
        system.log.error('a stored password does not bind; not healed (the root credential does not bind)', {
          key: item.sk,
        });
        continue;
      }
      const outcome = await healAccount(context, config as DirectoryConfig, item, reason);
      if (outcome === 'healed') counts.healed++;
      else if (outcome !== 'changed') counts.notHealed++;
      if (outcome === 'root-refused') rootRefused = true;
    } catch (error) {
      counts.failed++;
      system.log.error('could not check a directory account; the next pass tries again', {
        key: item.sk,
        error: messageOf(error),
      });
    }
  }
  const finished = batch.length === accounts.length;
  const last = batch.at(-1)?.sk;
  const jitter = 0.75 + Math.random() * 0.5;
  const nextAt = finished
    ? epochSeconds(system.clock) + Math.max(1, Math.round((settings.intervalSeconds || 365 * 86_400) * jitter))
    : epochSeconds(system.clock);
  await storage
    .update(
      checkCursorKey,
      {
        set: { nextAt, ...(finished || !last ? {} : { after: last }) },
        remove: ['runId', ...(finished ? ['after'] : [])],
      },
      { when: { equals: { runId } } },
    )
    .catch((error) => {
      if (!(error instanceof ConditionFailed)) throw error;
    });
  if (counts.checked > 0 || counts.failed > 0)
    system.log.info('checked directory accounts', {
      mount: mount.path,
      reason,
      checked: counts.checked,
      dead: counts.dead,
      healed: counts.healed,
      notHealed: counts.notHealed,
      failed: counts.failed,
      passFinished: finished,
    });
  return { healed: counts.healed, failed: counts.failed };
}
