import { periodicJobs } from '@keyhaven/core/entry-points/engine-periodic-jobs.ts';
import { coreFromEnvironment } from '@keyhaven/core/entry-points/secrets-core-from-environment.ts';
import { allSecretsFamilies, loadFamily, type SecretsFamily } from '@keyhaven/core/secrets/family-list.ts';
import type { PeriodicJob } from '@keyhaven/core/secrets/framework/backend.ts';
import { leaseQueues, sweepLeases } from '@keyhaven/core/secrets/framework/lease-sweep.ts';
import { nextDue } from '@keyhaven/core/storage/due.ts';
import { inRounds } from './rounds.ts';

/**
 * An engine's job (`Job-<engine>` in stacks/Jobs.ts: every engine whose backend declares periodic work or a job of its
 * own): the engine is the family named by `KEYHAVEN_ENGINE`, loaded on the first run from its own chunk, so the
 * function loads that engine's code and no other's. Each round revokes its due leases and runs its periodic jobs
 * (`Backend.periodic`); between rounds it waits for its lease queues and the queues its jobs read.
 *
 * One entry for every engine rather than a file per engine: adding an engine touches its folder and the family list
 * only, and the bundle's other engines are chunks that a cold start never loads.
 */
type Engine = { core: ReturnType<typeof coreFromEnvironment>; jobs: PeriodicJob[] };

const engines = new Map<SecretsFamily, Promise<Engine>>();

function engineOf(name = process.env.KEYHAVEN_ENGINE): Promise<Engine> {
  const family = allSecretsFamilies.find((known) => known === name);
  if (!family)
    throw new Error(
      `KEYHAVEN_ENGINE must name an engine family (${allSecretsFamilies.join(', ')}), not "${name ?? ''}"`,
    );
  let engine = engines.get(family);
  if (!engine) {
    engine = loadFamily(family).then((backends) => ({
      core: coreFromEnvironment(backends),
      jobs: periodicJobs(backends).map(({ job }) => job),
    }));
    engine.catch(() => engines.delete(family));
    engines.set(family, engine);
  }
  return engine;
}

export async function handler(): Promise<{ leases: number; rotated?: number; failed: number }> {
  const { core, jobs } = await engineOf();
  return inRounds<{ leases: number; rotated?: number; failed: number }>(
    async () => {
      const instance = await core();
      const leases = await sweepLeases(instance);
      if (jobs.length === 0) return leases;
      const counts = { leases: leases.leases, rotated: 0, failed: leases.failed };
      for (const job of jobs) {
        const { done, failed } = await job.run(instance);
        counts.rotated += done;
        counts.failed += failed;
      }
      return counts;
    },
    async () => {
      const instance = await core();
      return nextDue(instance, [...leaseQueues(instance), ...jobs.flatMap((job) => job.queues ?? [])]);
    },
  );
}
