import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Aws, DefaultStackSynthesizer } from 'aws-cdk-lib';
import { ManagedPolicy, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { BucketDeployment, Source } from 'aws-cdk-lib/aws-s3-deployment';
import { NagSuppressions } from 'cdk-nag';
import { type StackContext, use } from 'sst/constructs';
import { buildConsole } from '../packages/ui/build.ts';
import { consoleKeyPrefix } from './console-hosting.ts';
import { SchedulerApi } from './SchedulerApi.ts';
import { SecretsApi } from './SecretsApi.ts';

/** `ui/config.json`: where the console finds the two services. An empty `secretsUrl` is the console's own origin. */
export interface ConsoleConfig {
  secretsUrl: string;
  schedulerUrl: string;
}

/**
 * The web console's files, deployed after both APIs: the build of `packages/ui` (`buildConsole`: `index.html`,
 * `app.js`, `app.css`) and `config.json` naming the scheduler's URL, under `ui/` in the console's bucket (made by the
 * secrets stack, whose distribution serves it at `/ui/`). Its own stack, so neither API stack refers to the other's
 * URL through it. Each deploy replaces the files (older ones are removed) and invalidates `/ui/*`.
 */
export async function Console({ stack }: StackContext) {
  const secrets = use(SecretsApi);
  const scheduler = use(SchedulerApi);
  const assets = mkdtempSync(path.join(tmpdir(), 'keyhaven-console-'));
  await buildConsole(assets);
  const config: ConsoleConfig = { secretsUrl: '', schedulerUrl: scheduler.url };
  const sources = [Source.asset(assets), Source.jsonData('config.json', config)];
  const deployment = new BucketDeployment(stack, 'ConsoleFiles', {
    role: deploymentRole(stack, secrets),
    destinationBucket: secrets.consoleBucket,
    destinationKeyPrefix: consoleKeyPrefix,
    sources,
    distribution: secrets.distribution,
    distributionPaths: [`/${consoleKeyPrefix}*`],
    memoryLimit: 256,
    prune: true,
  });
  stack.addOutputs({ ConsoleUrl: `${secrets.url}/${consoleKeyPrefix}` });
  return { deployment };
}

/**
 * The role of CDK's deployment handler, with exactly what it does instead of CDK's wildcard grants (`s3:GetObject*`,
 * `s3:List*`, `s3:DeleteObject*`, … on both buckets), which it cannot add to this role: read the source zips from the
 * CDK asset bucket, list the console bucket, put and delete objects under `ui/` only, and invalidate the secrets
 * distribution (and wait for it). Its logs as every function's (`AWSLambdaBasicExecutionRole`).
 */
function deploymentRole(stack: StackContext['stack'], secrets: ReturnType<typeof SecretsApi>) {
  const role = new Role(stack, 'ConsoleDeploymentRole', {
    assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
    managedPolicies: [ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaBasicExecutionRole')],
    description: `keyhaven ${stack.stage}: deploys the console's files into its bucket`,
  });
  // CDK's bootstrap bucket (`npx cdk bootstrap`), where the source zips are uploaded.
  const qualifier = stack.synthesizer.bootstrapQualifier ?? DefaultStackSynthesizer.DEFAULT_QUALIFIER;
  const assetBucket = `cdk-${qualifier}-assets-${Aws.ACCOUNT_ID}-${Aws.REGION}`;
  role.addToPolicy(
    new PolicyStatement({ actions: ['s3:GetObject'], resources: [`arn:${Aws.PARTITION}:s3:::${assetBucket}/*`] }),
  );
  role.addToPolicy(new PolicyStatement({ actions: ['s3:ListBucket'], resources: [secrets.consoleBucket.bucketArn] }));
  role.addToPolicy(
    new PolicyStatement({
      actions: ['s3:PutObject', 's3:DeleteObject'],
      resources: [secrets.consoleBucket.arnForObjects(`${consoleKeyPrefix}*`)],
    }),
  );
  role.addToPolicy(
    new PolicyStatement({
      actions: ['cloudfront:CreateInvalidation', 'cloudfront:GetInvalidation'],
      resources: [
        `arn:${Aws.PARTITION}:cloudfront::${Aws.ACCOUNT_ID}:distribution/${secrets.distribution.distributionId}`,
      ],
    }),
  );
  NagSuppressions.addResourceSuppressions(
    role,
    [
      {
        id: 'AwsSolutions-IAM5',
        reason:
          "[by design] The deployment reads the CDK asset bucket's source zips (object ARNs /*) and writes and prunes the console's files (the console bucket's ui/*).",
        appliesTo: [
          {
            regex:
              '/^Resource::(arn:<AWS::Partition>:s3:::cdk-[a-z0-9]+-assets-<AWS::AccountId>-<AWS::Region>|<ConsoleBucket[0-9A-F]{8}\\.Arn>\\/ui)\\/\\*$/',
          },
        ],
      },
    ],
    true,
  );
  return role.withoutPolicyUpdates();
}
