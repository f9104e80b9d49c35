import { allSecretsFamilies, backendsOf, coreFromEnvironment, sweepExpired } from '@keyhaven/core';

const core = coreFromEnvironment(backendsOf(allSecretsFamilies));

/**
 * EventBridge calls this every minute. Leases are swept every few seconds within the run so expiry is
 * honoured within seconds, not a minute; the run ends before the next one starts.
 */
export async function handler(): Promise<{ tokens: number; leases: number; failed: number }> {
  const started = Date.now();
  const total = { tokens: 0, leases: 0, failed: 0 };
  while (Date.now() - started < 50_000) {
    const round = await sweepExpired(await core());
    total.tokens += round.tokens;
    total.leases += round.leases;
    total.failed += round.failed;
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  }
  return total;
}
