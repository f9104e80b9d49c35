import { Template } from 'aws-cdk-lib/assertions';
import { App, getStack } from 'sst/constructs';
import { initProject } from 'sst/project.js';
import { beforeAll, describe, expect, it } from 'vitest';
import config from '../../sst.config.ts';
import { SchedulerApi } from '../../stacks/SchedulerApi.ts';
import { SecretsApi } from '../../stacks/SecretsApi.ts';
import { Storage } from '../../stacks/Storage.ts';
import { appFunctions, resourcesOf, sealingKeyOf, single } from './template-queries.ts';

/** Stage `example-multi-region` deployed in its authoritative region (us-east-1), synthesised offline. */
describe('stage "example-multi-region" in its authoritative region us-east-1', () => {
  let storage: Template;
  let apis: Template[];
  beforeAll(async () => {
    await initProject({ stage: 'example-multi-region' });
    const app = new App({
      mode: 'deploy',
      stage: 'example-multi-region',
      name: 'keyhaven',
      region: 'us-east-1',
      account: '123456789012',
    });
    await config.stacks(app);
    await app.finish();
    storage = Template.fromStack(getStack(Storage));
    apis = [Template.fromStack(getStack(SecretsApi)), Template.fromStack(getStack(SchedulerApi))];
  }, 180_000);

  it('makes the table a global table with a replica in eu-west-1, keeping the stream of old and new images', () => {
    const table = single(storage, 'AWS::DynamoDB::Table');
    expect(table.Properties.StreamSpecification).toEqual({ StreamViewType: 'NEW_AND_OLD_IMAGES' });
    expect(table.Properties.TableName).toBe('example-multi-region-keyhaven-Table');
    expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
    const replicas = resourcesOf(storage, 'Custom::DynamoDBReplica').map(([, replica]) => replica.Properties.Region);
    expect(replicas).toEqual(['eu-west-1']);
  });

  it('makes the sealing key a multi-Region key and outputs its ARN for the replica region', () => {
    const [, key] = sealingKeyOf(storage);
    expect(key.Properties.MultiRegion).toBe(true);
    const outputs = Object.values(storage.toJSON().Outputs as Record<string, { Value: unknown; Export?: unknown }>);
    expect(outputs.some((output) => JSON.stringify(output.Value).includes('SealingKey'))).toBe(true);
  });

  it('gives the functions this region as the authoritative one, and no URL to forward to', () => {
    for (const template of apis) {
      for (const [, fn] of appFunctions(template)) {
        const env = fn.Properties.Environment.Variables;
        expect(env.KEYHAVEN_REGION).toBe('us-east-1');
        expect(env.KEYHAVEN_AUTHORITATIVE_REGION).toBe('us-east-1');
        expect(env.KEYHAVEN_AUTHORITATIVE_URL).toBeUndefined();
      }
    }
  });
});
