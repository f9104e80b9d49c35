import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Match } from 'aws-cdk-lib/assertions';
import { useFunctions } from 'sst/constructs';
import { useProject } from 'sst/project.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { tableDefinition } from '../../packages/core/src/storage/table-definition.ts';
import { keyActions, providedByRuntime } from '../../stacks/functions.ts';
import { engineFamilies, engineJobs } from '../../stacks/families.ts';
import { tableAccess } from '../../stacks/permissions.ts';
import { consoleContentSecurityPolicy } from '../../packages/ui/csp.ts';
import { devSchedulerOrigin } from '../../stacks/console-hosting.ts';
import { mountRoutes } from '../../stacks/SecretsApi.ts';
import { familyOfType, stageConfig } from '../../stacks/stage-config.ts';
import { throttledSchedulerRoutes, throttledSecretsRoutes } from '../../stacks/throttling.ts';
import { backendFilesOfFamilies, backendName } from '../support/bundle-checks.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import {
  appFunctions,
  asList,
  engineJobEntry,
  entryOf,
  policyStatements,
  resourcesOf,
  routeTargets,
  secretsEntry,
  single,
  mappingOf,
} from './template-queries.ts';

describe('SST app, synthesised offline (stage "test")', () => {
  let s: Synthesized;
  beforeAll(async () => {
    s = await synthesize('test');
  }, 120_000);

  it('creates the table from the shared definition: keys, the due index, TTL on expiresAt, stream with both images, PITR, provisioned capacity from its floor', () => {
    s.storage.hasResourceProperties('AWS::DynamoDB::Table', {
      // Provisioned (CloudFormation's default: no BillingMode), starting at the stage's floor; autoscaling follows.
      BillingMode: Match.absent(),
      ProvisionedThroughput: { ReadCapacityUnits: 1, WriteCapacityUnits: 1 },
      KeySchema: [
        { AttributeName: tableDefinition.partitionKey, KeyType: 'HASH' },
        { AttributeName: tableDefinition.sortKey, KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: tableDefinition.globalIndexes.map((index) =>
        Match.objectLike({
          IndexName: index.indexName,
          KeySchema: [
            { AttributeName: index.partitionKey, KeyType: 'HASH' },
            { AttributeName: index.sortKey, KeyType: 'RANGE' },
          ],
        }),
      ),
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: false,
    });
    s.storage.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
  });

  it('runs every function of the app on nodejs24.x, arm64, with a bundled `file.handler` entry', () => {
    const functions = appFunctions(s.secrets).concat(appFunctions(s.scheduler), appFunctions(s.jobs));
    expect(functions.map(([, fn]) => entryOf(fn)).sort()).toEqual(
      [
        ...allSecretsFamilies.map(secretsEntry),
        'functions/scheduler/api.handler',
        'functions/scheduler/event-stream.handler',
        'functions/scheduler/client.handler',
        'functions/jobs/sweep.handler',
        ...Object.keys(engineJobs).map(engineJobEntry),
        'functions/jobs/table-stream.handler',
        'functions/jobs/evaluation-trigger.handler',
      ].sort(),
    );
    for (const [, fn] of functions) {
      expect(fn.Properties).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'] });
      expect(fn.Properties.Code.S3Key).toMatch(/\.zip$/);
      expect(Object.keys(fn.Properties.Environment.Variables)).toEqual(
        expect.arrayContaining(['KEYHAVEN_TABLE', 'KEYHAVEN_KMS_KEY_ID']),
      );
    }
  });

  it('leaves the AWS SDK v3 out of every bundle, to be imported from the nodejs24.x runtime', () => {
    const functions = Object.entries(useFunctions().all).filter(([, props]) =>
      String(props.handler).startsWith('functions/'),
    );
    expect(functions.length).toBe(
      appFunctions(s.secrets).length + appFunctions(s.scheduler).length + appFunctions(s.jobs).length,
    );
    for (const [id, props] of functions) {
      expect(props.nodejs?.esbuild?.external).toEqual(expect.arrayContaining([...providedByRuntime]));
      const bundle = readFileSync(
        path.join(useProject().paths.artifacts, id, String(props.handler).replace(/\.[^.]+$/, '.mjs')),
        'utf8',
      );
      expect(bundle, String(props.handler)).toMatch(/from\s*"@aws-sdk\/client-dynamodb"/);
      expect(bundle, String(props.handler)).not.toContain('@smithy/');
    }
  });

  it("zips a family's function and an engine's job with that family's backends only, no other family's chunk", () => {
    // esbuild names the chunk of each backend family-list.ts imports after its file: `<name>-backend-<hash>.mjs`.
    const backendsOf = backendFilesOfFamilies();
    const built = Object.entries(useFunctions().all).filter(
      ([, props]) => props.environment?.KEYHAVEN_FAMILY ?? props.environment?.KEYHAVEN_ENGINE,
    );
    expect(built.length).toBe(allSecretsFamilies.length + Object.keys(engineJobs).length);
    for (const [id, props] of built) {
      const family = (props.environment?.KEYHAVEN_FAMILY ?? props.environment?.KEYHAVEN_ENGINE) as string;
      expect(props.nodejs?.esbuild?.define, id).toEqual({
        'process.env.KEYHAVEN_BUNDLED_FAMILY': JSON.stringify(family),
      });
      const backends = readdirSync(path.join(useProject().paths.artifacts, id), { recursive: true })
        .map(String)
        .flatMap((file) => /([a-z]+)-backend-[A-Z0-9]+\.mjs$/.exec(file)?.[1] ?? [])
        .sort();
      expect(backends, id).toEqual((backendsOf[family] ?? []).map(backendName).sort());
    }
  });

  it('routes sys/*, auth/token/* and identity/* to the system function and every declared mount to its family', () => {
    const targets = routeTargets(s.secrets);
    const expected: Record<string, string> = {};
    for (const route of [...mountRoutes('sys'), ...mountRoutes('auth/token'), ...mountRoutes('identity')])
      expected[route] = secretsEntry('system');
    for (const mount of stageConfig('test').mounts) {
      const family = familyOfType[mount.type] as string;
      for (const route of mountRoutes(mount.path)) expected[route] = secretsEntry(family);
    }
    // The throttled login and credential routes (stacks/throttling.ts) reach the function their mount's catch-all does.
    for (const route of Object.keys(throttledSecretsRoutes(stageConfig('test').mounts))) {
      const mount = stageConfig('test').mounts.find((declared) => route.startsWith(`ANY /v1/${declared.path}/`));
      expected[route] = secretsEntry(mount ? (familyOfType[mount.type] as string) : 'system');
    }
    expect(targets).toEqual(expected);
    expect(targets['ANY /v1/auth/jwt/{proxy+}']).toBe(secretsEntry('jwt'));
    expect(targets['ANY /v1/ldap/{proxy+}']).toBe(secretsEntry('ldap'));
  });

  it('tells the secrets functions which mounts the stage declares', () => {
    const declared = JSON.parse(
      appFunctions(s.secrets)[0]?.[1].Properties.Environment.Variables.KEYHAVEN_DECLARED_MOUNTS,
    );
    expect(declared).toEqual(stageConfig('test').mounts.map((mount) => ({ path: `${mount.path}/`, type: mount.type })));
  });

  it('serves the event stream from a RESPONSE_STREAM Function URL behind the scheduler distribution, everything else from the HTTP API', () => {
    s.scheduler.hasResourceProperties('AWS::Lambda::Url', { InvokeMode: 'RESPONSE_STREAM', AuthType: 'AWS_IAM' });
    const [, stream] =
      appFunctions(s.scheduler).find(
        ([, fn]) => fn.Properties.Handler === 'functions/scheduler/event-stream.handler',
      ) ?? [];
    expect(stream?.Properties.Timeout).toBe(900);
    expect(Number(stream?.Properties.Environment.Variables.KEYHAVEN_STREAM_LIMIT_MS)).toBeLessThan(900_000);
    expect(routeTargets(s.scheduler)).toEqual(
      Object.fromEntries(
        ['ANY /v1/{proxy+}', ...Object.keys(throttledSchedulerRoutes)].map((route) => [
          route,
          'functions/scheduler/api.handler',
        ]),
      ),
    );
    const distribution = single(s.scheduler, 'AWS::CloudFront::Distribution');
    const config = distribution.Properties.DistributionConfig;
    const streamBehavior = config.CacheBehaviors.find(
      (behavior: { PathPattern: string }) => behavior.PathPattern === '/v1/event/stream',
    );
    const streamOrigin = config.Origins.find((origin: { Id: string }) => origin.Id === streamBehavior?.TargetOriginId);
    expect(streamOrigin?.OriginAccessControlId).toBeDefined();
    s.scheduler.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunctionUrl',
      Principal: 'cloudfront.amazonaws.com',
    });
  });

  it('runs the token sweep and each declared engine job every minute from EventBridge, the directory job in its network', () => {
    const rules = resourcesOf(s.jobs, 'AWS::Events::Rule');
    const functions = Object.fromEntries(resourcesOf(s.jobs, 'AWS::Lambda::Function'));
    const targets = rules.map(([, rule]) => ({
      schedule: rule.Properties.ScheduleExpression,
      handler: entryOf(functions[rule.Properties.Targets[0].Arn['Fn::GetAtt'][0]] as Parameters<typeof entryOf>[0]),
    }));
    expect(targets).toEqual(
      expect.arrayContaining([
        { schedule: 'rate(1 minute)', handler: 'functions/jobs/sweep.handler' },
        ...Object.keys(engineJobs).map((family) => ({ schedule: 'rate(1 minute)', handler: engineJobEntry(family) })),
      ]),
    );
    expect(targets).toHaveLength(1 + Object.keys(engineJobs).length);
  });

  it('feeds the table stream to the TTL backstop with batch item failures, retries and a failures bucket', () => {
    const mapping = mappingOf(s.jobs, 'functions/jobs/table-stream.handler');
    expect(mapping.Properties).toMatchObject({
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      // Whole failed batches go to an S3 bucket (issue 25; test/deploy/operations.test.ts), which notifies the queue.
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [expect.stringMatching(/^TableStreamFailures/), 'Arn'] } },
      },
      FilterCriteria: { Filters: [{ Pattern: expect.stringContaining('REMOVE') }] },
    });
    expect(JSON.stringify(mapping.Properties.EventSourceArn)).toContain('StreamArn');
    const functions = Object.fromEntries(resourcesOf(s.jobs, 'AWS::Lambda::Function'));
    expect(functions[(mapping.Properties.FunctionName as { Ref: string }).Ref]?.Properties.Handler).toBe(
      'functions/jobs/table-stream.handler',
    );
  });

  it('feeds the evaluations written pending or blocked, the records of room made, the broker unpaused and the forced GC requested to the evaluation trigger', () => {
    const mapping = mappingOf(s.jobs, 'functions/jobs/evaluation-trigger.handler');
    expect(mapping.Properties).toMatchObject({
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
      StartingPosition: 'LATEST',
      MaximumBatchingWindowInSeconds: 0,
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [expect.stringMatching(/^TableStreamFailures/), 'Arn'] } },
      },
    });
    expect(JSON.stringify(mapping.Properties.EventSourceArn)).toContain('StreamArn');
    const patterns = (mapping.Properties.FilterCriteria as { Filters: Array<{ Pattern: string }> }).Filters.map(
      (filter) => JSON.parse(filter.Pattern),
    );
    expect(patterns).toEqual([
      {
        eventName: ['INSERT', 'MODIFY'],
        dynamodb: { NewImage: { pk: { S: [{ prefix: 'sched#eval#' }] }, Status: { S: ['pending', 'blocked'] } } },
      },
      { eventName: ['INSERT'], dynamodb: { Keys: { pk: { S: [{ prefix: 'sched#capacity#' }] } } } },
      {
        eventName: ['MODIFY'],
        dynamodb: { Keys: { pk: { S: ['sched#scheduler-config'] } }, OldImage: { PauseEvalBroker: { BOOL: [true] } } },
      },
      { eventName: ['INSERT', 'MODIFY'], dynamodb: { Keys: { pk: { S: ['sched#gc'] }, sk: { S: ['forced'] } } } },
    ]);
  });

  it('grants no wildcard action anywhere, and the functions only the table, its indexes and the key', () => {
    const statements = s.all.flatMap(policyStatements);
    expect(statements.length).toBeGreaterThan(0);
    for (const { where, statement } of statements) {
      for (const action of asList(statement.Action)) expect(action, `${where} grants ${action}`).not.toContain('*');
    }
    const allowedForFunctions = new Set<string>([
      ...Object.values(tableAccess).flatMap((access) => access.items),
      ...keyActions,
    ]);
    const streamAndQueue = new Set([
      'dynamodb:DescribeStream',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
      'dynamodb:ListStreams',
      'sqs:SendMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      // The on-failure destination: the failed batch written to the failures bucket (issue 25).
      's3:PutObject',
      's3:ListBucket',
    ]);
    for (const template of [s.secrets, s.scheduler, s.jobs]) {
      for (const { where, statement } of policyStatements(template).filter(({ where }) =>
        /^(Secrets|Scheduler|Job)/.test(where),
      )) {
        for (const action of asList(statement.Action)) {
          const fine =
            allowedForFunctions.has(action) ||
            ((where.startsWith('Jobtablestream') || where.startsWith('Jobevaluationtrigger')) &&
              streamAndQueue.has(action)) ||
            (where.startsWith('Secretssystem') && action === 'lambda:InvokeFunction');
          expect(fine, `${where} grants ${action}`).toBe(true);
          if (allowedForFunctions.has(action)) expect(JSON.stringify(statement.Resource)).not.toBe('"*"');
        }
      }
    }
  });

  it('answers no CORS when the stage config lists no origin', () => {
    for (const [, api] of [
      ...resourcesOf(s.secrets, 'AWS::ApiGatewayV2::Api'),
      ...resourcesOf(s.scheduler, 'AWS::ApiGatewayV2::Api'),
    ]) {
      expect(api.Properties.CorsConfiguration).toBeUndefined();
    }
  });

  it('a dev stage keeps HTTP sys/init and acl/bootstrap: no first-tokens resource, no refusal setting, every function may create the data key', () => {
    expect(resourcesOf(s.storage, 'Custom::KeyhavenFirstTokens')).toEqual([]);
    expect(resourcesOf(s.storage, 'AWS::SecretsManager::Secret')).toEqual([]);
    for (const [, fn] of [...appFunctions(s.secrets), ...appFunctions(s.scheduler)]) {
      expect(fn.Properties.Environment.Variables.KEYHAVEN_FIRST_TOKENS_SECRET).toBeUndefined();
    }
    const keyGrants = policyStatements(s.secrets).filter(({ statement }) =>
      asList(statement.Action).includes('kms:GenerateDataKey'),
    );
    expect(keyGrants.length).toBe(appFunctions(s.secrets).length);
  });

  it('lets the system function invoke exactly the engine functions, named by mount type, to revoke their leases', () => {
    const functions = Object.fromEntries(appFunctions(s.secrets));
    const idOf = (entry: string) => Object.entries(functions).find(([, fn]) => entryOf(fn) === entry)?.[0] as string;
    const system = functions[idOf(secretsEntry('system'))];
    const engineFunctions = JSON.stringify(system?.Properties.Environment.Variables.KEYHAVEN_ENGINE_FUNCTIONS);
    const engineTypes = backendsOf(engineFamilies).map((backend) => backend.type);
    expect(engineTypes.length).toBeGreaterThan(0);
    for (const type of engineTypes) {
      expect(engineFunctions).toContain(`${type}\\":\\"`);
      expect(engineFunctions).toContain(idOf(secretsEntry(familyOfType[type] as string)));
    }
    expect(engineFunctions).not.toContain(idOf(secretsEntry('jwt')));
    const invokes = policyStatements(s.secrets).filter(({ statement }) =>
      asList(statement.Action).includes('lambda:InvokeFunction'),
    );
    expect(invokes.map(({ where }) => where.startsWith('Secretssystem'))).toEqual([true]);
    const resources = (invokes[0]?.statement.Resource ?? []) as Array<{ 'Fn::GetAtt': [string, string] }>;
    const targets = resources.map((arn) => arn['Fn::GetAtt'][0]).sort();
    expect(targets).toEqual(engineFamilies.map((family) => idOf(secretsEntry(family))).sort());
  });

  // Issue 26 on a dev stage without customDomains: both distributions have CloudFront's names, known only at deploy.
  it("gives the scheduler functions the secrets distribution's CloudFront name as the console's origin, and the console's CSP any CloudFront name", () => {
    const all = appFunctions(s.scheduler);
    expect(all).toHaveLength(3);
    // The client protocol's function answers agents, never the console: no CORS origin.
    const functions = all.filter(([, fn]) => fn.Properties.Handler !== 'functions/scheduler/client.handler');
    expect(functions).toHaveLength(2);
    for (const [, fn] of all.filter(([, fn]) => fn.Properties.Handler === 'functions/scheduler/client.handler'))
      expect(fn.Properties.Environment.Variables.KEYHAVEN_CONSOLE_ORIGINS).toBeUndefined();
    for (const [id, fn] of functions) {
      expect(JSON.stringify(fn.Properties.Environment.Variables.KEYHAVEN_CONSOLE_ORIGINS), id).toMatch(
        /^\{"Fn::Join":\["",\["https:\/\/",\{"Fn::ImportValue":"test-keyhaven-SecretsApi:ExportsOutputFnGetAttSecretsDistribution[0-9A-F]+DomainName[0-9A-F]+"\}\]\]\}$/,
      );
    }
    const policy = resourcesOf(s.secrets, 'AWS::CloudFront::ResponseHeadersPolicy').find(([id]) =>
      id.startsWith('ConsoleSecurityHeaders'),
    )?.[1];
    expect(
      policy?.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig.ContentSecurityPolicy.ContentSecurityPolicy,
    ).toBe(consoleContentSecurityPolicy(devSchedulerOrigin));
    // No cycle: the secrets stack names nothing of the scheduler's.
    expect(JSON.stringify(s.secrets.toJSON())).not.toContain('SchedulerApi');
  });
});
