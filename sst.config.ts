import type { SSTConfig } from 'sst';
import { Audit } from './stacks/Audit.ts';
import { Console } from './stacks/Console.ts';
import { Edge } from './stacks/Edge.ts';
import { Jobs } from './stacks/Jobs.ts';
import { suppressNagFindings } from './stacks/nag.ts';
import { Operations } from './stacks/Operations.ts';
import { SchedulerApi } from './stacks/SchedulerApi.ts';
import { SecretsApi } from './stacks/SecretsApi.ts';
import { Storage } from './stacks/Storage.ts';

/** The SST v2 app. The stage's mounts, regions, domains and log retention live in `stacks/stage-config.ts`. */
export default {
  config() {
    return { name: 'keyhaven', region: process.env.AWS_REGION ?? 'us-east-1' };
  },
  async stacks(app) {
    app.setDefaultFunctionProps({ runtime: 'nodejs24.x', architecture: 'arm_64' });
    app.stack(Storage).stack(Edge).stack(SecretsApi).stack(SchedulerApi).stack(Jobs).stack(Audit).stack(Operations);
    // The console's files: built at synthesis (packages/ui/build.ts), deployed after both APIs.
    await app.stack(Console);
    // cdk-nag's accepted findings, each with its reason (test/deploy/cdk-nag-*.test.ts run the packs over every stage).
    suppressNagFindings(app);
  },
} satisfies SSTConfig;
