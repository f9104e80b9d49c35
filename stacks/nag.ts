import type { IConstruct } from 'constructs';
import { type NagPackSuppression, NagSuppressions } from 'cdk-nag';
import type { Stack } from 'aws-cdk-lib';
import { stageConfig } from './stage-config.ts';

/**
 * Every finding of cdk-nag's AwsSolutions, Serverless and NIST 800-53 R5 packs that the stacks accept, each with why.
 * `open` marks what issue 25 still asks to build (it is suppressed so that `npm test` fails on anything new, and
 * listed in docs/deployment.md, "AWS's rule packs", as not done); `by design` marks a finding that is the intended behaviour.
 * `test/deploy/cdk-nag-*.test.ts` synthesise every stage with the three packs and fail on any finding not listed here.
 */
export const nagFindings: Array<NagPackSuppression & { status: 'by design' | 'open'; devStagesOnly?: true }> = [
  {
    id: 'AwsSolutions-APIG4',
    status: 'by design',
    reason:
      'The HTTP APIs authorise each request in the function, with Vault and Nomad tokens and policies, not with an API Gateway authorizer.',
  },
  {
    id: 'AwsSolutions-IAM4',
    status: 'by design',
    reason:
      'AWSLambdaBasicExecutionRole only lets a function write its own log streams, AWSLambdaVPCAccessExecutionRole only lets the directory function attach to its subnets, AWSBackupServiceRolePolicyForBackup is the role AWS Backup takes to back the table up; every other grant is its own, least-privilege policy.',
    appliesTo: [
      'Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole',
      'Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole',
      'Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup',
    ],
  },
  {
    id: 'AwsSolutions-IAM5',
    status: 'by design',
    reason:
      'Resource * only where the action has no resource level (dynamodb:ListStreams, logs:PutRetentionPolicy of the CDK log-retention helper, s3:PutBucketNotification of its notifications helper); object ARNs /* where a writer puts new objects (Firehose into the audit bucket, Lambda failed batches into the failures bucket).',
    appliesTo: ['Resource::*', { regex: '/^Resource::<(AuditBucket|TableStreamFailures)[0-9A-F]{8}\\.Arn>\\/\\*$/' }],
  },
  {
    id: 'NIST.800.53.R5-IAMNoInlinePolicy',
    status: 'by design',
    reason:
      'Each function has its own role with an inline policy naming only its table actions, keys and queues (stacks/permissions.ts); a managed policy would be shared.',
  },
  {
    id: 'Serverless-LambdaTracing',
    status: 'by design',
    reason:
      'X-Ray is off: traces would carry request paths of secrets; the API access logs, function logs and audit trail record requests instead.',
  },
  {
    id: 'Serverless-LambdaDLQ',
    status: 'by design',
    reason:
      'Request functions are invoked synchronously (a DLQ never applies); scheduled ticks are dropped on failure on purpose; the stream consumer has an on-failure destination.',
  },
  {
    id: 'NIST.800.53.R5-LambdaDLQ',
    status: 'by design',
    reason:
      'As Serverless-LambdaDLQ: synchronous request functions, dropped ticks, and an on-failure destination for the stream.',
  },
  {
    id: 'Serverless-LambdaAsyncFailureDestination',
    status: 'by design',
    reason: 'A scheduled tick that fails is dropped (no retry, no destination): the next minute does the same work.',
  },
  {
    id: 'Serverless-EventBusDLQ',
    status: 'by design',
    reason: 'A tick EventBridge cannot deliver within 60 s is dropped on purpose; the next minute does the same work.',
  },
  {
    id: 'NIST.800.53.R5-LambdaInsideVPC',
    status: 'by design',
    reason:
      'The functions reach DynamoDB, KMS and Google over AWS public endpoints; only the directory function joins the directory network (directoryVpc).',
  },
  {
    id: 'NIST.800.53.R5-LambdaConcurrency',
    status: 'by design',
    reason:
      'Request functions share the unreserved pool, bounded by API Gateway throttling; the jobs, stream consumer and scheduler functions have reserved concurrency.',
  },
  {
    id: 'Serverless-LambdaLatestVersion',
    status: 'by design',
    reason:
      'Only CDK and SST helper functions (log retention, bucket notifications, stack metadata): their runtime is chosen by the library.',
  },
  {
    id: 'AwsSolutions-L1',
    status: 'by design',
    reason: 'Only CDK and SST helper functions, whose runtime the library chooses; the app functions run nodejs24.x.',
  },
  {
    id: 'NIST.800.53.R5-S3DefaultEncryptionKMS',
    status: 'by design',
    reason:
      'The access log buckets: S3 server access logging and CloudFront standard logs cannot write under a customer key, so they use SSE-S3.',
  },
  {
    id: 'NIST.800.53.R5-S3BucketVersioningEnabled',
    status: 'by design',
    reason: 'The access log buckets: written once by the log services, expired by lifecycle.',
  },
  {
    id: 'NIST.800.53.R5-S3BucketLoggingEnabled',
    status: 'by design',
    reason: 'The access log buckets themselves: logging them would log the logs.',
  },
  {
    id: 'AwsSolutions-S1',
    status: 'by design',
    reason: 'The access log buckets themselves: logging them would log the logs.',
  },
  {
    id: 'Serverless-SQSRedrivePolicy',
    status: 'by design',
    reason:
      'Both queues are themselves dead-letter queues (the stream failures notice, the undelivered alarm notifications); they have no further redrive.',
  },
  {
    id: 'AwsSolutions-SQS3',
    status: 'by design',
    reason:
      'Both queues are themselves dead-letter queues, each watched by an alarm: the failures bucket notifications, and the alarm notifications SNS could not deliver. They are the end of the line.',
  },
  {
    id: 'NIST.800.53.R5-SecretsManagerRotationEnabled',
    status: 'by design',
    reason:
      'The first-tokens secret holds the first root and management tokens once; the operator revokes them, rotation does not apply. The scheduler origin secret is read by CloudFormation into the distribution and the function at deploy; a rotated value would reach neither until a deploy updates them, and until then every request through CloudFront would be refused.',
  },
  {
    id: 'AwsSolutions-SMG4',
    status: 'by design',
    reason:
      'The first-tokens secret is written once and revoked by the operator; rotation does not apply. The scheduler origin secret is resolved at deploy into the distribution and the function, so it changes with a deploy, not a rotation.',
  },
  {
    id: 'AwsSolutions-CFR1',
    status: 'by design',
    reason: 'The scheduler is used from anywhere its operators are; no country is refused.',
  },
  {
    id: 'AwsSolutions-CFR4',
    status: 'by design',
    devStagesOnly: true,
    reason:
      'Dev stages without customDomains only: on the default *.cloudfront.net name CloudFront accepts TLS 1.0. Every other stage must name its own domains (checkEdge, stacks/stage-checks.ts), and those distributions require TLS 1.2 (TLSv1.2_2021).',
  },
  {
    id: 'AwsSolutions-CFR2',
    status: 'by design',
    devStagesOnly: true,
    reason:
      'Dev stages deployed outside us-east-1 without edgeWebAclArn only (a CloudFront web ACL can be made in us-east-1 only); every other stage has one on both distributions (stacks/Edge.ts, checkEdge).',
  },
  {
    id: 'NIST.800.53.R5-DynamoDBInBackupPlan',
    status: 'by design',
    reason:
      'Dev stages only (point-in-time recovery, no AWS Backup: a locked vault would outlive their teardown); every other stage has a backup plan (stacks/backup.ts).',
  },
  {
    id: 'NIST.800.53.R5-S3BucketReplicationEnabled',
    status: 'by design',
    reason:
      'The audit bucket is replicated into another account when the stage config has audit.replication (stage prod shows one; stacks/audit-replication.ts). Not replicated: the access-log buckets (their contents expire with the audit retention), the stream failures bucket (replayed, then done with) and the console bucket (rebuilt by every deploy).',
  },
];

/**
 * CDK's own global-table replica provider (a stage with `replicaRegions`: the Lambda functions, step function and
 * policies `Table` makes to add replicas at deploy time). Its code and permissions are the library's, not ours.
 */
export const replicaProviderFindings: NagPackSuppression[] = [
  'AwsSolutions-IAM5',
  'AwsSolutions-SF1',
  'AwsSolutions-SF2',
  'NIST.800.53.R5-IAMPolicyNoStatementsWithFullAccess',
  'Serverless-LambdaDefaultMemorySize',
  'Serverless-StepFunctionStateMachineXray',
].map((id) => ({
  id,
  reason:
    "[by design] CDK's global-table replica provider (aws-dynamodb Table replicationRegions): the library's own functions, roles and step function.",
}));

/**
 * The one public Function URL: the client protocol's (`Scheduler-client`, stacks/SchedulerApi.ts), which the agents
 * call directly. Suppressed on its two invoke permissions only, so the packs still prove every other function private.
 */
export const publicClientUrlFinding: NagPackSuppression = {
  id: 'NIST.800.53.R5-LambdaFunctionPublicAccessProhibited',
  reason:
    '[by design] The client protocol function answers heartbeats on a public Function URL (no CloudFront, API Gateway or WAF in front: at one request per heartbeat each would cost more than the function, docs/performance.md). It serves only /v1/client/ (404 for every other path, test/attacks/scheduler-client-url.test.ts); every call there authenticates as a node (SecretID, identity or introduction token); reserved concurrency bounds what a flood costs (docs/security.md).',
};
const publicClientUrlPermissions = ['/Scheduler-client/invoke-function-url', '/Scheduler-client/invoke-function'];

/** Applies `nagFindings` to every stack of the app (each suppression's reason is stored in the template's metadata). */
export function suppressNagFindings(app: IConstruct): void {
  for (const child of app.node.children) {
    if ((child as Stack).templateOptions === undefined) continue;
    // A finding accepted on dev stages only is not suppressed on any other stage, so the packs prove it fixed there.
    const isDev = stageConfig((child as Stack & { stage: string }).stage).isDev;
    const suppressions = nagFindings
      .filter((finding) => isDev || !finding.devStagesOnly)
      .map(({ status, devStagesOnly: _, ...suppression }) => ({
        ...suppression,
        reason: `[${status}] ${suppression.reason}`,
      }));
    NagSuppressions.addStackSuppressions(child as Stack, suppressions, true);
    for (const construct of child.node.findAll()) {
      const id = construct.node.id;
      if (id === '@aws-cdk--aws-dynamodb.ReplicaProvider' || id.startsWith('SourceTableAttachedManagedPolicy-')) {
        NagSuppressions.addResourceSuppressions(construct, replicaProviderFindings, true);
      }
      if (publicClientUrlPermissions.some((suffix) => construct.node.path.endsWith(suffix)))
        NagSuppressions.addResourceSuppressions(construct, [publicClientUrlFinding]);
    }
  }
}
