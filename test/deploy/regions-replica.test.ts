import { Template } from 'aws-cdk-lib/assertions';
import { App, getStack } from 'sst/constructs';
import { initProject } from 'sst/project.js';
import { beforeAll, describe, expect, it } from 'vitest';
import config from '../../sst.config.ts';
import { Jobs } from '../../stacks/Jobs.ts';
import { SchedulerApi } from '../../stacks/SchedulerApi.ts';
import { SecretsApi } from '../../stacks/SecretsApi.ts';
import { Storage } from '../../stacks/Storage.ts';
import { checkReplicaRegion } from '../../stacks/stage-checks.ts';
import { stageConfig } from '../../stacks/stage-config.ts';
import { appFunctions, resourcesOf, single } from './template-queries.ts';

/** Stage `example-multi-region` deployed in its replica region (eu-west-1), synthesised offline. */
describe('stage "example-multi-region" in its replica region eu-west-1', () => {
  let storage: Template;
  let jobs: Template;
  let apis: Template[];
  beforeAll(async () => {
    await initProject({ stage: 'example-multi-region' });
    const app = new App({
      mode: 'deploy',
      stage: 'example-multi-region',
      name: 'keyhaven',
      region: 'eu-west-1',
      account: '123456789012',
    });
    await config.stacks(app);
    await app.finish();
    storage = Template.fromStack(getStack(Storage));
    jobs = Template.fromStack(getStack(Jobs));
    apis = [Template.fromStack(getStack(SecretsApi)), Template.fromStack(getStack(SchedulerApi))];
  }, 180_000);

  it('creates no table (the authoritative deploy made the replica) and replicates the multi-Region key', () => {
    expect(resourcesOf(storage, 'AWS::DynamoDB::Table')).toEqual([]);
    // The only keys made here are the alarm topic's and the log groups': no sealing key of its own.
    expect(
      resourcesOf(storage, 'AWS::KMS::Key')
        .map(([id]) => id)
        .filter((id) => !/^(AlarmTopicKey|LogsKey)/.test(id)),
    ).toEqual([]);
    const replicaKey = single(storage, 'AWS::KMS::ReplicaKey');
    expect(replicaKey.Properties.PrimaryKeyArn).toBe(
      'arn:aws:kms:us-east-1:123456789012:key/mrk-0123456789abcdef0123456789abcdef',
    );
  });

  it('runs no scheduled jobs and no stream consumer: they run in the authoritative region', () => {
    expect(appFunctions(jobs)).toEqual([]);
    expect(resourcesOf(jobs, 'AWS::Lambda::EventSourceMapping')).toEqual([]);
  });

  it('gives every API function the authoritative region and URLs, the replica table by name, and the replica key', () => {
    const functions = apis.flatMap((template) => appFunctions(template));
    expect(functions.length).toBeGreaterThan(3);
    for (const [, fn] of functions) {
      const env = fn.Properties.Environment.Variables;
      expect(env.KEYHAVEN_REGION).toBe('eu-west-1');
      expect(env.KEYHAVEN_AUTHORITATIVE_REGION).toBe('us-east-1');
      expect(env.KEYHAVEN_AUTHORITATIVE_URL).toBe('https://scheduler.example.com');
      expect(env.KEYHAVEN_AUTHORITATIVE_SECRETS_URL).toBe('https://secrets.example.com');
      expect(env.KEYHAVEN_TABLE).toBe('example-multi-region-keyhaven-Table');
      expect(JSON.stringify(env.KEYHAVEN_KMS_KEY_ID)).toContain('SealingKey');
    }
  });

  it('refuses a replica-region deploy without the authoritative URLs and key, or in a region with no replica', () => {
    expect(() =>
      checkReplicaRegion(
        'lone',
        stageConfig('lone', 'eu-west-1', { authoritativeRegion: 'us-east-1', replicaRegions: ['eu-west-1'] }),
      ),
    ).toThrow('set authoritativeUrl, authoritativeSecretsUrl, authoritativeSealingKeyArn');
    expect(() => checkReplicaRegion('example-multi-region', stageConfig('example-multi-region', 'ap-south-1'))).toThrow(
      'example-multi-region has no replica in ap-south-1',
    );
    expect(() =>
      checkReplicaRegion('example-multi-region', stageConfig('example-multi-region', 'eu-west-1')),
    ).not.toThrow();
  });
});
