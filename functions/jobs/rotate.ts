import { rotateDue } from '@keyhaven/core/rotation-job.ts';
import { coreFromEnvironment } from '@keyhaven/core/runtime.ts';
import { cloudBackend } from '@keyhaven/core/secrets/engines/cloud/cloud-backend.ts';
import { ldapBackend } from '@keyhaven/core/secrets/engines/ldap/ldap-backend.ts';

/** The engines with scheduled work: directory password rotation, cloud root rotation and clean-up. */
const core = coreFromEnvironment([ldapBackend, cloudBackend]);

const roundIntervalMs = 5_000;
/** How long one invocation keeps going (`KEYHAVEN_JOB_RUN_MS`, default 50 s: done before the next minute's run). */
const runMs = () => Number(process.env.KEYHAVEN_JOB_RUN_MS ?? 50_000);

/** EventBridge calls this every minute; rotations due within the minute are picked up by the loop inside. */
export async function handler(): Promise<{ rotated: number; failed: number }> {
  const started = Date.now();
  const total = { rotated: 0, failed: 0 };
  for (;;) {
    const round = await rotateDue(await core());
    total.rotated += round.rotated;
    total.failed += round.failed;
    if (Date.now() - started + roundIntervalMs >= runMs()) break;
    await new Promise((resolve) => setTimeout(resolve, roundIntervalMs));
  }
  return total;
}
