/** How long one invocation may keep going (`KEYHAVEN_JOB_RUN_MS`, default 50 s: done before the next minute's run). */
const runMs = () => Number(process.env.KEYHAVEN_JOB_RUN_MS ?? 50_000);
/**
 * The shortest pause between rounds (`KEYHAVEN_JOB_PAUSE_MS`, default 5 s), so work that stays due (claimed by
 * another process, failing) is not retried in a tight loop.
 */
const minPauseMs = () => Number(process.env.KEYHAVEN_JOB_PAUSE_MS ?? 5_000);

/**
 * EventBridge starts a job every minute. The job does one round, then asks when its queues next fall due
 * (`nextDue`, epoch seconds): if that is within this run, it waits for it and goes again, so leases and rotations
 * are honoured within seconds, not a minute; otherwise it returns at once, so an idle job costs one short
 * invocation a minute. Returns the counts of all rounds added up.
 */
export async function inRounds<Counts extends Record<string, number>>(
  round: () => Promise<Counts>,
  nextDue: () => Promise<number | undefined>,
): Promise<Counts> {
  const deadline = Date.now() + runMs();
  let total: Counts | undefined;
  for (;;) {
    const counts = await round();
    total = total
      ? (Object.fromEntries(Object.entries(total).map(([key, value]) => [key, value + (counts[key] ?? 0)])) as Counts)
      : counts;
    const next = await nextDue();
    if (next === undefined) return total;
    const wakeAt = Math.max(next * 1000, Date.now() + minPauseMs());
    if (wakeAt >= deadline) return total;
    await new Promise((resolve) => setTimeout(resolve, wakeAt - Date.now()));
  }
}
