/**
 * How often the sweep runs the garbage collection: once per interval across every process (Nomad's
 * `job_gc_interval`, `deployment_gc_interval` and `node_gc_interval`, 5 minutes; its `eval_gc_interval` is 3), though
 * the sweep runs every minute in AWS and every second under `npm start`. The run is claimed with one conditional
 * update of one item (`GC_PK` / `GC_LAST_SK`): taken when the last run is an interval old, or claims a time after
 * now (a forged or skewed item never stops the collection). `PUT /v1/system/gc` is apart from it (`forced-gc.ts`).
 */
import { ConditionFailed, type Store } from '../../../storage/store.ts';
import { GC_LAST_SK, GC_PK } from '../../keys.ts';

export const gcIntervalMs = 5 * 60_000;

/** Whether this sweep runs the collection: true when it took the run for `now` (epoch ms). */
export async function claimGcRun(store: Store, now: number, intervalMs = gcIntervalMs): Promise<boolean> {
  try {
    await store.update(
      { pk: GC_PK, sk: GC_LAST_SK },
      { set: { at: now } },
      { when: { any: [{ missing: ['at'] }, { atMost: { at: now - intervalMs } }, { above: { at: now } }] } },
    );
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}
