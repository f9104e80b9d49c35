import { Template } from 'aws-cdk-lib/assertions';
import { App, getStack } from 'sst/constructs';
import { initProject } from 'sst/project.js';
import config from '../../sst.config.ts';
import { Audit } from '../../stacks/Audit.ts';
import { Console } from '../../stacks/Console.ts';
import { Edge } from '../../stacks/Edge.ts';
import { Jobs } from '../../stacks/Jobs.ts';
import { Operations } from '../../stacks/Operations.ts';
import { SchedulerApi } from '../../stacks/SchedulerApi.ts';
import { SecretsApi } from '../../stacks/SecretsApi.ts';
import { Storage } from '../../stacks/Storage.ts';

export interface Synthesized {
  storage: Template;
  edge: Template;
  secrets: Template;
  scheduler: Template;
  jobs: Template;
  audit: Template;
  operations: Template;
  console: Template;
  all: Template[];
}

/**
 * Synthesises the SST app offline, as `sst deploy` would before it talks to AWS (which it must never do here):
 * the functions are really bundled by esbuild. One synthesis per test file (SST keeps process-wide state).
 */
export async function synthesize(
  stage: string,
  options: { beforeFinish?: (app: App) => void; region?: string } = {},
): Promise<Synthesized> {
  await initProject({ stage });
  const app = new App({
    mode: 'deploy',
    stage,
    name: 'keyhaven',
    region: options.region ?? 'us-east-1',
    account: '123456789012',
  });
  await config.stacks(app);
  options.beforeFinish?.(app);
  await app.finish();
  const storage = Template.fromStack(getStack(Storage));
  const secrets = Template.fromStack(getStack(SecretsApi));
  const scheduler = Template.fromStack(getStack(SchedulerApi));
  const jobs = Template.fromStack(getStack(Jobs));
  const audit = Template.fromStack(getStack(Audit));
  const operations = Template.fromStack(getStack(Operations));
  const edge = Template.fromStack(getStack(Edge));
  const console = Template.fromStack(getStack(Console));
  return {
    storage,
    edge,
    secrets,
    scheduler,
    jobs,
    audit,
    operations,
    console,
    all: [storage, edge, secrets, scheduler, jobs, audit, operations, console],
  };
}
