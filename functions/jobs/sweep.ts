import type { Backend } from '@keyhaven/core/http/backend.ts';
import { sweepExpired } from '@keyhaven/core/jobs.ts';
import { coreFromEnvironment } from '@keyhaven/core/runtime.ts';
import { cloudBackend } from '@keyhaven/core/secrets/engines/cloud/cloud-backend.ts';
import { kvBackend } from '@keyhaven/core/secrets/engines/kv/kv-backend.ts';
import { ldapBackend } from '@keyhaven/core/secrets/engines/ldap/ldap-backend.ts';
import { meshBackend } from '@keyhaven/core/secrets/engines/mesh/mesh-backend.ts';

/**
 * Every backend that issues leases: the sweep runs their revoke hooks, including the revocations the other
 * functions handed off because they lack the backend. Login methods and `sys/` issue tokens, not leases.
 */
export const leaseBackends: Backend[] = [kvBackend, ldapBackend, meshBackend, cloudBackend];

const core = coreFromEnvironment(leaseBackends);

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
