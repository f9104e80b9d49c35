import type { SSTConfig } from 'sst';
import { Storage } from './stacks/Storage.ts';

/** The SST v2 app. The deployment issue adds the API, scheduler and job stacks beside Storage. */
export default {
  config() {
    return { name: 'keyhaven', region: process.env.AWS_REGION ?? 'us-east-1' };
  },
  stacks(app) {
    app.setDefaultFunctionProps({ runtime: 'nodejs24.x' });
    app.stack(Storage);
  },
} satisfies SSTConfig;
