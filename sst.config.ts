import type { SSTConfig } from 'sst';
import { Audit } from './stacks/Audit.ts';
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
  stacks(app) {
    app.setDefaultFunctionProps({ runtime: 'nodejs24.x', architecture: 'arm_64' });
    app.stack(Storage).stack(SecretsApi).stack(SchedulerApi).stack(Jobs).stack(Audit).stack(Operations);
    // cdk-nag's accepted findings, each with its reason (test/deploy/cdk-nag-*.test.ts run the packs over every stage).
    suppressNagFindings(app);
  },
} satisfies SSTConfig;
