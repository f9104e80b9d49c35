import type { Core } from './core.ts';
import type { Backend, PeriodicJob } from './secrets/framework/backend.ts';

/** The periodic jobs the given backends declare (`Backend.periodic`), each with its engine's mount type. */
export const periodicJobs = (backends: Iterable<Backend>): Array<{ engine: string; job: PeriodicJob }> =>
  [...backends].flatMap((backend) => (backend.periodic ?? []).map((job) => ({ engine: backend.type, job })));

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
