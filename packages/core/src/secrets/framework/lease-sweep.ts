import { allShards, dueInPartition } from '../../storage/due.ts';
import { leasePk, leaseQueue } from '../leases/lease-manager.ts';
import { finishDisabledMounts } from '../mounts/disable-mount.ts';
import type { SecretsServices } from './services.ts';

/** The due queues `sweepLeases` reads: one per engine this process bundles that issues leases. */
export const leaseQueues = (core: SecretsServices) =>
  [...core.backends].filter(([, backend]) => backend.leases).map(([type]) => leaseQueue(type));

export interface SweepOptions {
  /** At most this many leases per call, over all queues and shards (default 10,000). */
  limit?: number;
  /** Stop taking new pages after this long (wall clock, default 40 s), so a job's round ends inside its run. */
  budgetMs?: number;
  /** Revocations in flight per queue shard (default 4: 68 in all for one engine's 17 partitions). */
  perShard?: number;
  /** Revocations started per second over the whole call (default `sweepRate`); 0 for no pacing. */
  perSecond?: number;
}

/**
 * The sweep's pace: at most this many revocations start per second in one sweep call (over every queue and shard).
 * A storm of expiries is then worked through at a steady rate instead of as fast as the table answers, leaving
 * DynamoDB capacity and the API's share of it alone: a kv revocation is a claim (UpdateItem) and a TransactWriteItems
 * of two items, about 6 write units, so 200/s is ~1,200 WCU/s spread over the 16 shards (~75 per shard partition, a
 * tenth of what one partition takes). With the job's cadence (a run every minute, working up to 50 s of it, see
 * functions/jobs/rounds.ts) that is up to 10,000 revocations a run: 100,000 expiring together are revoked within
 * 10 runs, about 10 minutes. Override with `KEYHAVEN_SWEEP_PER_SECOND`.
 */
export const sweepRate = () => Number(process.env.KEYHAVEN_SWEEP_PER_SECOND ?? 200);

const pageSize = 100;

/**
 * Revokes the due leases of every engine this process bundles, each from its engine's queue (expired, handed off
 * by a function without the backend, or retried after a failure, with backoff: see LeaseManager), then finishes
 * disabling that engine's mounts whose leases are all gone.
 *
 * Every shard of a queue is swept at once, each page by page (earliest first within the shard) until it has
 * nothing due, the call's `limit` is used up or its time budget is spent: a storm of expiries is worked through
 * in one round rather than one page per run.
 */
export async function sweepLeases(
  core: SecretsServices,
  options: SweepOptions | number = {},
): Promise<{ leases: number; failed: number }> {
  const {
    limit = 10_000,
    budgetMs = 40_000,
    perShard = 4,
    perSecond = sweepRate(),
  } = typeof options === 'number' ? { limit: options } : options;
  const pace = pacer(perSecond);
  const result = { leases: 0, failed: 0 };
  const stopAt = Date.now() + budgetMs;
  let slots = limit;
  // A lease another process holds stays due until it is done: met again, it ends that shard's part of this call.
  const seen = new Set<string>();
  const sweepPartition = async (partition: string) => {
    while (Date.now() < stopAt && slots > 0) {
      const wanted = Math.min(pageSize, slots);
      const read = await dueInPartition(core, partition, wanted);
      const found = read.filter((item) => !seen.has(item.sk));
      for (const item of found) seen.add(item.sk);
      // Shards read at once share the call's limit: a page takes what is left of it when it comes back.
      const page = found.slice(0, Math.min(found.length, slots));
      slots -= page.length;
      await eachWithConcurrency(page, perShard, async (item) => {
        await pace();
        try {
          if (item.pk !== leasePk(item.sk)) await core.leases.adoptUnsharded(item);
          await core.leases.revoke(item.sk);
          result.leases++;
        } catch (error) {
          result.failed++;
          core.log.error('sweeping a lease failed', { leaseId: item.sk, error: String(error) });
        }
      });
      if (read.length < wanted || found.length < read.length || page.length < found.length) return;
    }
  };
  await Promise.all(leaseQueues(core).flatMap(allShards).map(sweepPartition));
  await finishDisabledMounts(core);
  return result;
}

/** Waits for the next of `perSecond` evenly spaced starts (no credit builds up while idle); `0` never waits. */
function pacer(perSecond: number): () => Promise<void> {
  let next = Date.now();
  return async () => {
    if (!(perSecond > 0)) return;
    const now = Date.now();
    const at = Math.max(now, next);
    next = at + 1000 / perSecond;
    if (at > now) await new Promise((resolve) => setTimeout(resolve, at - now));
  };
}

/** Runs `work` over `items` with at most `concurrency` at once. */
async function eachWithConcurrency<T>(
  items: T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
