import { allSecretsFamilies, backendsOf, coreFromEnvironment, rotateDue } from '@keyhaven/core';

const core = coreFromEnvironment(backendsOf(allSecretsFamilies));

/** EventBridge calls this every minute; rotations due within the minute are picked up by the loop inside. */
export async function handler(): Promise<{ rotated: number; failed: number }> {
  const started = Date.now();
  const total = { rotated: 0, failed: 0 };
  while (Date.now() - started < 50_000) {
    const round = await rotateDue(await core());
    total.rotated += round.rotated;
    total.failed += round.failed;
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  }
  return total;
}
