import { allSecretsFamilies, type SecretsFamily, secretsFamilies } from '../packages/core/src/secrets/families.ts';
import type { Backend } from '../packages/core/src/secrets/framework/backend.ts';

/**
 * What the stacks derive from the family list (`packages/core/src/secrets/family-list.ts`) and what each backend
 * declares (`periodic`, `deployment`): which families have a job, what their jobs read. (A family's network and
 * environment: `familyFunctionProps` in functions.ts.)
 */

/** The entry of every engine's job: the engine is the family its `KEYHAVEN_ENGINE` names. */
export const engineJobHandler = 'functions/jobs/engine-job.handler';

const backendsOf = (family: SecretsFamily): Backend[] => secretsFamilies[family];

/**
 * Whether a family's engine runs a job of its own: it has periodic work, write-ahead records to roll back (the
 * framework's periodic job), or leases whose revocation calls out.
 */
const hasOwnJob = (family: SecretsFamily) =>
  backendsOf(family).some(
    (backend) => (backend.periodic?.length ?? 0) > 0 || backend.walRollback !== undefined || backend.deployment?.ownJob,
  );

/** Family -> its job's handler, for each family whose engine has a job of its own (`Job-<family>`). */
export const engineJobs: Partial<Record<SecretsFamily, string>> = Object.fromEntries(
  allSecretsFamilies.filter(hasOwnJob).map((family) => [family, engineJobHandler]),
);

/** The families that serve secrets engines (every backend of kind `secret`, `system` aside). */
export const engineFamilies: SecretsFamily[] = allSecretsFamilies.filter(
  (family) => family !== 'system' && backendsOf(family).every((backend) => backend.kind === 'secret'),
);

/** Whether a family's paths read items with the caller's token in one round trip (`PathSpec.prefetch`). */
export const prefetches = (family: SecretsFamily): boolean =>
  backendsOf(family).some((backend) => backend.paths.some((spec) => spec.prefetch));

/** Table partitions a family's functions read beyond an engine's own, each with why: the endpoints' or the job's. */
export function extraReads(family: SecretsFamily, of: 'endpoints' | 'job'): Record<string, string> {
  const reads: Record<string, string> = {};
  for (const backend of backendsOf(family)) {
    if (of === 'endpoints') Object.assign(reads, backend.deployment?.reads);
    else for (const job of backend.periodic ?? []) Object.assign(reads, job.reads);
  }
  return reads;
}

/** The mount types of a family whose backends issue leases: each has its lease queue (`expiry:<type>`). */
export const engineLeaseTypes = (family: SecretsFamily): string[] =>
  backendsOf(family)
    .filter((backend) => backend.leases)
    .map((backend) => backend.type);

/** The `due` index queues a family's periodic jobs read (each with its shards). */
export const periodicQueues = (family: SecretsFamily): string[] =>
  backendsOf(family)
    .flatMap((backend) => (backend.periodic ?? []).flatMap((job) => job.queues ?? []))
    .flatMap((queue) => [queue, `${queue}#*`]);
