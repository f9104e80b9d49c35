import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearerToNomadTokenFile, originReadTimeouts } from '../../stacks/SchedulerApi.ts';
import { stageConfig } from '../../stacks/stage-config.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import {
  appFunctions,
  entryOf,
  resourcesOf,
  routeTargets,
  sealingKeyOf,
  secretsEntry,
  single,
} from './template-queries.ts';

describe('SST app, synthesised offline (stage "prod")', () => {
  let s: Synthesized;
  beforeAll(async () => {
    s = await synthesize('prod');
  }, 120_000);

  it('protects the table and the key from deletion outside dev stages', () => {
    const table = single(s.storage, 'AWS::DynamoDB::Table');
    expect(table.Properties.DeletionProtectionEnabled).toBe(true);
    expect(table.DeletionPolicy).toBe('Retain');
    const [, key] = sealingKeyOf(s.storage);
    expect(key.DeletionPolicy).toBe('Retain');
  });

  it('routes a second mount of the same type (gcp-prod) to the same cloud function', () => {
    const targets = routeTargets(s.secrets);
    expect(targets['ANY /v1/gcp-prod/{proxy+}']).toBe(secretsEntry('cloud'));
    expect(targets['ANY /v1/gcp-prod']).toBe(secretsEntry('cloud'));
    expect(targets['ANY /v1/cloud/{proxy+}']).toBe(secretsEntry('cloud'));
    const cloudFunctions = resourcesOf(s.secrets, 'AWS::Lambda::Function').filter(
      ([, fn]) => entryOf(fn) === secretsEntry('cloud'),
    );
    expect(cloudFunctions).toHaveLength(1);
  });

  describe('the scheduler distribution and its event stream', () => {
    const distribution = () => single(s.scheduler, 'AWS::CloudFront::Distribution');
    const logicalIdOf = (handler: string) =>
      appFunctions(s.scheduler).find(([, fn]) => fn.Properties.Handler === handler)?.[0] as string;
    const streamId = () => logicalIdOf('functions/scheduler/event-stream.handler');
    const distributionArn = () => ({
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':cloudfront::',
          { Ref: 'AWS::AccountId' },
          ':distribution/',
          { Ref: Object.keys(Object.fromEntries(resourcesOf(s.scheduler, 'AWS::CloudFront::Distribution')))[0] },
        ],
      ],
    });

    it('lets only this distribution invoke the stream function, through its Function URL: InvokeFunctionUrl and InvokeFunction', () => {
      const permissions = resourcesOf(s.scheduler, 'AWS::Lambda::Permission')
        .map(([, permission]) => permission.Properties)
        .filter((properties) => properties.Principal === 'cloudfront.amazonaws.com');
      expect(permissions).toHaveLength(2);
      const [urlId, url] = resourcesOf(s.scheduler, 'AWS::Lambda::Url')[0] ?? [];
      expect(url?.Properties.TargetFunctionArn).toEqual({ 'Fn::GetAtt': [streamId(), 'Arn'] });
      for (const properties of permissions) {
        expect(properties.FunctionName).toEqual({ 'Fn::GetAtt': [urlId, 'FunctionArn'] });
        expect(properties.SourceArn).toEqual(distributionArn());
      }
      expect(permissions.map((properties) => properties.Action).sort()).toEqual([
        'lambda:InvokeFunction',
        'lambda:InvokeFunctionUrl',
      ]);
      expect(
        permissions.find((properties) => properties.Action === 'lambda:InvokeFunction')?.InvokedViaFunctionUrl,
      ).toBe(true);
    });

    it('sets the read timeout of every origin explicitly: 35 s for the HTTP API, 60 s for the stream', () => {
      const config = distribution().Properties.DistributionConfig;
      const stream = config.CacheBehaviors.find(
        (behavior: { PathPattern: string }) => behavior.PathPattern === '/v1/event/stream',
      );
      const timeouts = Object.fromEntries(
        config.Origins.map((origin: { Id: string; CustomOriginConfig: { OriginReadTimeout?: number } }) => [
          origin.Id === stream.TargetOriginId
            ? 'stream'
            : origin.Id === config.DefaultCacheBehavior.TargetOriginId
              ? 'api'
              : origin.Id,
          origin.CustomOriginConfig.OriginReadTimeout,
        ]),
      );
      expect(timeouts).toEqual({
        api: originReadTimeouts.httpApi.toSeconds(),
        stream: originReadTimeouts.eventStream.toSeconds(),
      });
    });

    it('runs the Bearer-to-X-Nomad-Token function (cloudfront-js-2.0, the file the test runs) on viewer requests of both behaviours', () => {
      const config = distribution().Properties.DistributionConfig;
      const stream = config.CacheBehaviors.find(
        (behavior: { PathPattern: string }) => behavior.PathPattern === '/v1/event/stream',
      );
      const [functionId, cloudFrontFunction] = resourcesOf(s.scheduler, 'AWS::CloudFront::Function')[0] ?? [];
      expect(cloudFrontFunction?.Properties.FunctionCode).toBe(readFileSync(bearerToNomadTokenFile, 'utf8'));
      expect(cloudFrontFunction?.Properties.FunctionConfig.Runtime).toBe('cloudfront-js-2.0');
      expect(cloudFrontFunction?.Properties.AutoPublish).toBe(true);
      // OAC replaces Authorization on the stream; CloudFront drops it from GET and HEAD to the HTTP API.
      const association = [{ EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [functionId, 'FunctionARN'] } }];
      expect(stream.FunctionAssociations).toEqual(association);
      expect(config.DefaultCacheBehavior.FunctionAssociations).toEqual(association);
    });

    it("reserves the stage's concurrency for the stream and blocking-query functions", () => {
      const functions = Object.fromEntries(appFunctions(s.scheduler));
      const reserved = stageConfig('prod').reservedConcurrency;
      expect(functions[streamId()]?.Properties.ReservedConcurrentExecutions).toBe(reserved.eventStream);
      expect(functions[logicalIdOf('functions/scheduler/api.handler')]?.Properties.ReservedConcurrentExecutions).toBe(
        reserved.schedulerApi,
      );
    });
  });

  it('makes the first tokens at deploy time: a secret under the stage key, the custom resource, HTTP init refused by the API functions', () => {
    const [secretId, secret] = resourcesOf(s.storage, 'AWS::SecretsManager::Secret')[0] ?? [];
    const [keyId] = sealingKeyOf(s.storage);
    expect(secret?.Properties.KmsKeyId).toEqual({ 'Fn::GetAtt': [keyId, 'Arn'] });
    expect(secret?.DeletionPolicy).toBe('Retain');
    const resource = single(s.storage, 'Custom::KeyhavenFirstTokens');
    const [deployId] =
      appFunctions(s.storage).find(([, fn]) => fn.Properties.Handler === 'functions/deploy/first-tokens.handler') ?? [];
    expect(resource.Properties).toEqual({
      ServiceToken: { 'Fn::GetAtt': [deployId, 'Arn'] },
      SecretId: { Ref: secretId },
    });
    const env = (template: typeof s.secrets, handler: string) =>
      appFunctions(template).find(([, fn]) => entryOf(fn) === handler)?.[1].Properties.Environment.Variables
        .KEYHAVEN_FIRST_TOKENS_SECRET;
    expect(JSON.stringify(env(s.secrets, secretsEntry('system')))).toContain('FirstTokensSecret');
    expect(JSON.stringify(env(s.scheduler, 'functions/scheduler/api.handler'))).toContain('FirstTokensSecret');
    expect(env(s.secrets, secretsEntry('kv'))).toBeUndefined();
    expect(env(s.scheduler, 'functions/scheduler/event-stream.handler')).toBeUndefined();
  });

  it('answers CORS on both HTTP APIs only for the stage config origins, never *', () => {
    const apis = [
      ...resourcesOf(s.secrets, 'AWS::ApiGatewayV2::Api'),
      ...resourcesOf(s.scheduler, 'AWS::ApiGatewayV2::Api'),
    ];
    expect(apis).toHaveLength(2);
    // The scheduler's also names the console's origin (the secrets distribution's own name): API Gateway answers its CORS.
    const consoleOrigin = `https://${stageConfig('prod').customDomains?.secrets?.domainName}`;
    for (const [index, [, api]] of apis.entries()) {
      expect(api.Properties.CorsConfiguration.AllowOrigins).toEqual([
        ...stageConfig('prod').corsOrigins,
        ...(index === 1 ? [consoleOrigin] : []),
      ]);
      expect(api.Properties.CorsConfiguration.AllowHeaders).not.toContain('*');
      expect(api.Properties.CorsConfiguration.AllowCredentials).toBe(false);
    }
  });

  it('alarms on every function error and throttle and on the dead-letter queue, at one occurrence in 5 minutes', () => {
    for (const template of [s.storage, s.secrets, s.scheduler, s.jobs]) {
      const alarms = resourcesOf(template, 'AWS::CloudWatch::Alarm').map(([, alarm]) => alarm.Properties);
      for (const [id] of appFunctions(template)) {
        for (const metric of ['Errors', 'Throttles']) {
          const found = alarms.filter(
            (alarm) =>
              alarm.MetricName === metric &&
              JSON.stringify(alarm.Dimensions) === JSON.stringify([{ Name: 'FunctionName', Value: { Ref: id } }]),
          );
          expect(found, `${metric} alarm of ${id}`).toHaveLength(1);
          expect(found[0]).toMatchObject({
            Namespace: 'AWS/Lambda',
            Statistic: 'Sum',
            Period: 300,
            Threshold: 1,
            EvaluationPeriods: 1,
            TreatMissingData: 'notBreaching',
          });
        }
      }
    }
    const [queueId] = resourcesOf(s.jobs, 'AWS::SQS::Queue')[0] ?? [];
    const queueAlarm = resourcesOf(s.jobs, 'AWS::CloudWatch::Alarm').find(
      ([, alarm]) => alarm.Properties.Namespace === 'AWS/SQS',
    )?.[1].Properties;
    expect(queueAlarm).toMatchObject({
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
  });
});
