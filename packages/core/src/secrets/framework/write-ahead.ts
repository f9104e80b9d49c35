import { type Clock, epochSeconds } from '../../lib/clock.ts';
import { randomBase62 } from '../../lib/random.ts';
import { ConditionFailed } from '../../storage/store.ts';
import type { MountWrite } from '../mounts/mount-storage.ts';
import type { WalContext, WalRecord, WalRollback } from './backend.ts';
import type { SecretsServices } from './services.ts';
import { storageFor, systemFor } from './system.ts';

/**
 * Write-ahead records, the one design every engine's crash safety uses (Vault's `framework.PutWAL` with the backend's
 * `WALRollback`): before a request does something outside the table it cannot take back by itself (creates a cloud
 * resource, ...), it records it (`writeAhead`); the transaction that stores the outcome drops that record and records
 * what the outcome made obsolete (`walWrites`). Whatever is left behind (a crash, a timeout, a failed call) is rolled
 * back by the backend's `walRollback`: inline as soon as the request no longer needs it (`rollBackNow`), else by the
 * engine's job once due (`rollBackDue`, a periodic job every backend with a `walRollback` gets), retried with backoff.
 */

/** Where a mount's records are: `wal/<start, zero-padded>-<random>`. */
export const walPrefix = 'wal/';

/** A record of `kind` keeping `data`: due now (a removal), or in `due` seconds (work about to be done). */
export function walRecord<Data extends object>(
  clock: Clock,
  kind: string,
  data: Data,
  due: 'now' | number,
): WalRecord<Data> {
  const now = epochSeconds(clock);
  return {
    sk: `${walPrefix}${now.toString().padStart(11, '0')}-${randomBase62(12)}`,
    ...data,
    kind,
    startedAt: now,
    dueAt: due === 'now' ? now : now + due,
    attempts: 0,
  } as WalRecord<Data>;
}

/** A record's attributes besides its key, as they are written. */
export function walAttributes(record: WalRecord<object>): Record<string, unknown> {
  const { sk: _sk, pk: _pk, ...attributes } = record as WalRecord<object> & { pk?: string };
  return attributes;
}

/** Writes the records before the work they name is done. */
export async function writeAhead(
  context: Pick<WalContext, 'storage'>,
  records: Array<WalRecord<object>>,
): Promise<void> {
  for (const record of records) await context.storage.putItem(record.sk, walAttributes(record));
}

/** The writes, for the transaction that stores the outcome, that drop the records ahead and record the obsolete. */
export function walWrites(ahead: Array<WalRecord<object>>, obsolete: Array<WalRecord<object>>): MountWrite[] {
  return [
    ...ahead.map((record): MountWrite => ({ delete: record.sk })),
    ...obsolete.map((record): MountWrite => ({ put: record.sk, item: walAttributes(record) })),
  ];
}

/** Rolls the records back now, best effort: a failure leaves its record for the job, due at once. */
export async function rollBackNow<Data extends object>(
  context: WalContext,
  records: Array<WalRecord<Data>>,
  rollback: (record: WalRecord<Data>) => Promise<void>,
  what = 'write-ahead rollback',
): Promise<void> {
  for (const record of records) {
    try {
      await rollback(record);
      await context.storage.delete(record.sk);
    } catch (error) {
      context.system.log.error(`${what} deferred to the job`, { kind: record.kind, error: (error as Error).message });
      await context.storage
        .update(record.sk, { set: { dueAt: epochSeconds(context.system.clock) } }, { when: { exists: true } })
        .catch(() => undefined);
    }
  }
}

/** How long a record waits after its `attempts`-th failed rollback: 30 s doubling, at most an hour. */
export const retryDelay = (attempts: number) => Math.min(30 * 2 ** (attempts - 1), 3600);

/**
 * Rolls back every due record of every mount of type `type` (what the engine's job runs): each through the rollback
 * `forMount` gives for its mount, then dropped; a failure is counted, logged and retried later (`retryDelay`).
 */
export async function rollBackDue(
  core: SecretsServices,
  type: string,
  forMount: WalRollback['forMount'],
  what = 'write-ahead rollback',
): Promise<{ settled: number; failed: number }> {
  const result = { settled: 0, failed: 0 };
  const now = epochSeconds(core.clock);
  for (const mount of await core.mounts.list()) {
    if (mount.type !== type) continue;
    const context: WalContext = { system: systemFor(core, mount), mount, storage: storageFor(core, mount) };
    const stored = await context.storage.items<{ kind: string; startedAt: number; dueAt: number; attempts?: number }>(
      walPrefix,
    );
    const due = stored.filter((record) => record.dueAt <= now) as unknown as WalRecord[];
    if (due.length === 0) continue;
    const rollback = forMount(context);
    for (const record of due) {
      try {
        await rollback(record);
        await context.storage.delete(record.sk);
        result.settled++;
      } catch (error) {
        result.failed++;
        const attempts = (record.attempts ?? 0) + 1;
        core.log.error(`${what} failed; will retry`, { kind: record.kind, attempts, error: (error as Error).message });
        // Only while the record is still there: the change it stands for may have been settled meanwhile (by a
        // request, in the transaction that drops the record), and a put would bring the record back for nothing.
        await context.storage
          .update(record.sk, { set: { attempts, dueAt: now + retryDelay(attempts) } }, { when: { exists: true } })
          .catch((failure: unknown) => {
            if (!(failure instanceof ConditionFailed)) throw failure;
          });
      }
    }
  }
  return result;
}
