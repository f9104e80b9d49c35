const roundIntervalMs = 5_000;
/** How long one invocation keeps going (`KEYHAVEN_JOB_RUN_MS`, default 50 s: done before the next minute's run). */
const runMs = () => Number(process.env.KEYHAVEN_JOB_RUN_MS ?? 50_000);

/**
 * EventBridge starts a job every minute; within the run, `round` repeats every few seconds, so leases and
 * rotations are honoured within seconds, not a minute. Returns the counts of all rounds added up.
 */
export async function inRounds<Counts extends Record<string, number>>(round: () => Promise<Counts>): Promise<Counts> {
  const started = Date.now();
  let total: Counts | undefined;
  for (;;) {
    const counts = await round();
    total = total ? (Object.fromEntries(Object.entries(total).map(([key, value]) => [key, value + (counts[key] ?? 0)])) as Counts) : counts;
    if (Date.now() - started + roundIntervalMs >= runMs()) return total;
    await new Promise((resolve) => setTimeout(resolve, roundIntervalMs));
  }
}
