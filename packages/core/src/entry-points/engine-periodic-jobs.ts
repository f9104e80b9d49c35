import type { Core } from '../composition/secrets-core.ts';
import type { Backend, PeriodicJob } from '../secrets/framework/backend.ts';
import type { SecretsServices } from '../secrets/framework/services.ts';
import { rollBackDue } from '../secrets/framework/write-ahead.ts';

/**
 * The periodic jobs of the given backends, each with its engine's mount type: what each declares (`Backend.periodic`)
 * and, for one with a write-ahead rollback (`Backend.walRollback`), the rollback of its due records.
 */
export const periodicJobs = (backends: Iterable<Backend>): Array<{ engine: string; job: PeriodicJob }> =>
  [...backends].flatMap((backend) => [
    ...(backend.periodic ?? []).map((job) => ({ engine: backend.type, job })),
    ...(backend.walRollback ? [{ engine: backend.type, job: rollbackJob(backend.type, backend.walRollback) }] : []),
  ]);

const rollbackJob = (type: string, rollback: NonNullable<Backend['walRollback']>): PeriodicJob => ({
  name: 'write-ahead rollback',
  everySeconds: rollback.everySeconds ?? 5,
  run: async (core: SecretsServices) => {
    const { settled, failed } = await rollBackDue(core, type, rollback.forMount, `${type} write-ahead rollback`);
    return { done: settled, failed };
  },
});

/**
 * Engine work that has fallen due, once, for every engine this process serves, each from its own queue: what each
 * engine's `periodic` declares (the directory's root and static-role rotations; the cloud's root rotations and the
 * clean-up of what a crash or a cloud failure left half done).
 */
export async function rotateDue(core: Core): Promise<{ rotated: number; failed: number }> {
  const result = { rotated: 0, failed: 0 };
  for (const { job } of periodicJobs(core.backends.values())) {
    const { done, failed } = await job.run(core);
    result.rotated += done;
    result.failed += failed;
  }
  return result;
}
