import { allSecretsFamilies, backendsOf, coreFromEnvironment, sweepExpired } from '@keyhaven/core';

const core = coreFromEnvironment(backendsOf(allSecretsFamilies));

const roundIntervalMs = 5_000;
/** How long one invocation keeps going (`KEYHAVEN_JOB_RUN_MS`, default 50 s: done before the next minute's run). */
const runMs = () => Number(process.env.KEYHAVEN_JOB_RUN_MS ?? 50_000);

/**
 * EventBridge calls this every minute. Leases are swept every few seconds within the run so expiry is
 * honoured within seconds, not a minute; the run ends before the next one starts.
 */
export async function handler(): Promise<{ tokens: number; leases: number; failed: number }> {
  const started = Date.now();
  const total = { tokens: 0, leases: 0, failed: 0 };
  for (;;) {
    const round = await sweepExpired(await core());
    total.tokens += round.tokens;
    total.leases += round.leases;
    total.failed += round.failed;
    if (Date.now() - started + roundIntervalMs >= runMs()) break;
    await new Promise((resolve) => setTimeout(resolve, roundIntervalMs));
  }
  return total;
}
