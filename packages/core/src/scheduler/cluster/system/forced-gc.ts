/**
 * `PUT /v1/system/gc` as Nomad's `System.GarbageCollect` (`nomad/system_endpoint.go`), which enqueues a forced core
 * GC evaluation and answers at once: here the request is one item (`GC_PK` / `FORCED_GC_SK`) written with a fresh
 * request ID, and the collection (`gc.ts`, every threshold at zero) runs in the background, claimed:
 *
 * - who runs it: the table stream's consumer as the item is written (`worker/evaluation-trigger.ts`
 *   `forcedGcRequested`; in AWS `functions/jobs/evaluation-trigger.ts`, under `npm start` the stream poller), and
 *   the sweep as the backstop (`sweep.ts`), so a request is not lost when the process running it dies;
 * - one run at a time: a run claims the item (its `holder` and a lease `until`) with a conditional update; another
 *   consumer meanwhile finds the lease held and leaves it. A lease past its time (a process that died) is taken over;
 * - requests made before a run claims the item are one run (the item is rewritten, not added to); a request made while
 *   a run is under way changes the request ID, so the run's conditional delete fails and it runs once more for it (the
 *   first run may have read the state before that request).
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../../lib/clock.ts';
import { ConditionFailed, type Item, type Store } from '../../../storage/store.ts';
import { FORCED_GC_SK, GC_PK } from '../../keys.ts';

/** Where the request is. */
export const forcedGcKey = { pk: GC_PK, sk: FORCED_GC_SK } as const;

/** How long a run holds the request before another may take it over: past the evaluation trigger's 90 s time limit. */
export const forcedGcLeaseMs = 2 * 60_000;

/** The most runs one call makes for requests that keep arriving while it runs (the rest are the next call's). */
const maxRunsPerCall = 3;

interface ForcedGcRequest extends Item {
  /** Changes with every request. */
  request: string;
  /** When it was last requested (epoch ms). */
  requestedAt: number;
  /** The process running it, and until when (epoch ms): absent, or past, while nobody does. */
  holder?: string;
  until?: number;
}

/** Records a request for a forced collection (or joins one not yet run). */
export async function requestForcedGc(store: Store, clock: Clock): Promise<void> {
  await store.update(forcedGcKey, { set: { request: randomUUID(), requestedAt: clock.now() } });
}

/** Whether a forced collection is requested and not yet finished (claimed or not). */
export async function forcedGcPending(store: Store): Promise<boolean> {
  return (await store.get(forcedGcKey.pk, forcedGcKey.sk)) !== undefined;
}

/**
 * Runs the requested forced collection, if one is requested and nobody runs it: `collect` is called under the claim,
 * the request is removed after it (unless a new one came meanwhile: then it runs again). Returns how many runs it
 * made. A `collect` that throws releases the claim (the next consumer or sweep runs it) and is rethrown.
 */
export async function runForcedGc(store: Store, clock: Clock, collect: () => Promise<unknown>): Promise<number> {
  const holder = randomUUID();
  let runs = 0;
  while (runs < maxRunsPerCall) {
    const claimed = await claim(store, clock, holder);
    if (!claimed) break;
    runs++;
    try {
      await collect();
    } catch (error) {
      await release(store, holder);
      throw error;
    }
    try {
      await store.delete(forcedGcKey, { when: { equals: { request: claimed.request, holder } } });
      break;
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
      // Requested again while it ran: released, and claimed again for that request (or left to whoever took it).
      await release(store, holder);
    }
  }
  return runs;
}

/** The request, claimed for `holder`; undefined when there is none or another process holds it. */
async function claim(store: Store, clock: Clock, holder: string): Promise<ForcedGcRequest | undefined> {
  const request = await store.get<ForcedGcRequest>(forcedGcKey.pk, forcedGcKey.sk);
  const now = clock.now();
  if (!request || typeof request.request !== 'string') return undefined;
  // A lease further away than one lease from now (a forged or skewed item) does not hold the collection off.
  if (typeof request.until === 'number' && request.until > now && request.until <= now + forcedGcLeaseMs)
    return undefined;
  try {
    await store.update(
      forcedGcKey,
      { set: { holder, until: now + forcedGcLeaseMs } },
      {
        // Unchanged since read: the same request, and nobody claimed it meanwhile.
        when:
          request.until === undefined
            ? { equals: { request: request.request }, missing: ['until'] }
            : { equals: { request: request.request, until: request.until } },
      },
    );
    return { ...request, holder, until: now + forcedGcLeaseMs };
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    throw error;
  }
}

/** The claim given up (the request stays for the next run). */
async function release(store: Store, holder: string): Promise<void> {
  await store.update(forcedGcKey, { set: { until: 0 } }, { when: { equals: { holder } } }).catch((error) => {
    if (!(error instanceof ConditionFailed)) throw error;
  });
}

/** Whether this stream change (`worker/evaluation-trigger.ts` `StreamChange`) is a forced collection requested. */
export function isForcedGcRequest(change: {
  eventName: string;
  oldImage?: Record<string, unknown>;
  newImage?: Record<string, unknown>;
}): boolean {
  const image = change.newImage;
  if (change.eventName === 'REMOVE' || !image) return false;
  if (image.pk !== forcedGcKey.pk || image.sk !== forcedGcKey.sk) return false;
  // A claim or a release changes the same item without a new request.
  return change.eventName === 'INSERT' || change.oldImage?.request !== image.request;
}
