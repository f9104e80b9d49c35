import { beforeAll, describe, expect, it } from 'vitest';
import { stageConfig } from '../../stacks/stage-config.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import { appFunctions, resourcesOf, single } from './template-queries.ts';

/**
 * What the cluster's bill assumes of a deployed stage (docs/performance.md, "A cluster's bill"; issue 40): the table
 * on provisioned capacity with autoscaling at 90% on the table and its index, and the client protocol on a 128 MB
 * function of its own behind its Function URL, whose Lambda platform lines (START, END, REPORT) are not logged.
 */
let s: Synthesized;
beforeAll(async () => {
  s = await synthesize('prod');
}, 180_000);

describe('the cluster cost settings (synthesis of "prod")', () => {
  it('the table is provisioned, and autoscaling tracks 90% on the table’s and the index’s reads and writes', () => {
    const capacity = stageConfig('prod').tableCapacity;
    expect(capacity).toMatchObject({ mode: 'provisioned', targetPercent: 90 });
    if (capacity.mode !== 'provisioned') return;
    const table = single(s.storage, 'AWS::DynamoDB::Table').Properties;
    // CloudFormation's default billing mode is provisioned (CDK leaves it out).
    expect(table.BillingMode ?? 'PROVISIONED').toBe('PROVISIONED');
    expect(table.ProvisionedThroughput).toEqual({
      ReadCapacityUnits: capacity.read.min,
      WriteCapacityUnits: capacity.write.min,
    });
    for (const index of table.GlobalSecondaryIndexes)
      expect(index.ProvisionedThroughput).toEqual({
        ReadCapacityUnits: capacity.read.min,
        WriteCapacityUnits: capacity.write.min,
      });
    const targets = resourcesOf(s.storage, 'AWS::ApplicationAutoScaling::ScalableTarget').map(([id, target]) => ({
      id,
      dimension: target.Properties.ScalableDimension as string,
      min: target.Properties.MinCapacity,
      max: target.Properties.MaxCapacity,
    }));
    expect(targets.map((target) => target.dimension).sort()).toEqual([
      'dynamodb:index:ReadCapacityUnits',
      'dynamodb:index:WriteCapacityUnits',
      'dynamodb:table:ReadCapacityUnits',
      'dynamodb:table:WriteCapacityUnits',
    ]);
    for (const target of targets) {
      const range = target.dimension.endsWith('ReadCapacityUnits') ? capacity.read : capacity.write;
      expect([target.min, target.max]).toEqual([range.min, range.max]);
    }
    const policies = resourcesOf(s.storage, 'AWS::ApplicationAutoScaling::ScalingPolicy');
    expect(policies).toHaveLength(4);
    for (const [, policy] of policies) {
      expect(policy.Properties.PolicyType).toBe('TargetTrackingScaling');
      expect(policy.Properties.TargetTrackingScalingPolicyConfiguration.TargetValue).toBe(90);
    }
  });

  it('the client protocol has its own 128 MB function on a Function URL, with platform lines at WARN', () => {
    const [id, fn] =
      appFunctions(s.scheduler).find(
        ([, candidate]) => candidate.Properties.Handler === 'functions/scheduler/client.handler',
      ) ?? [];
    expect(fn).toBeDefined();
    expect(fn?.Properties.MemorySize).toBe(128);
    expect(fn?.Properties.Architectures).toEqual(['arm64']);
    expect(fn?.Properties.ReservedConcurrentExecutions).toBe(stageConfig('prod').reservedConcurrency.schedulerClient);
    expect(fn?.Properties.LoggingConfig).toEqual({
      LogFormat: 'JSON',
      SystemLogLevel: 'WARN',
      ApplicationLogLevel: 'INFO',
    });
    const urls = resourcesOf(s.scheduler, 'AWS::Lambda::Url').filter(([, url]) =>
      JSON.stringify(url.Properties.TargetFunctionArn).includes(id as string),
    );
    expect(urls).toHaveLength(1);
    expect(urls[0]?.[1].Properties.AuthType).toBe('NONE');
    expect(urls[0]?.[1].Properties.InvokeMode ?? 'BUFFERED').toBe('BUFFERED');
    // Its URL is a stack output, where the agents are pointed.
    expect(Object.keys(s.scheduler.toJSON().Outputs ?? {})).toContain('SchedulerClientUrl');
    // No HTTP API route and no CloudFront origin leads to it: the function answers only its own URL.
    expect(JSON.stringify(resourcesOf(s.scheduler, 'AWS::ApiGatewayV2::Integration'))).not.toContain(id as string);
  });
});
