import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { type IKey, Key } from 'aws-cdk-lib/aws-kms';
import { CfnLogGroup } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { StageConfig } from './stage-config.ts';

/**
 * The stage's key for its log groups (the API access logs, WAF's log): CloudWatch Logs of this region may use it for
 * log groups of this account and region only (the key policy AWS documents for log group encryption); the account
 * administers it through IAM, as CDK's default key policy says. Retained outside dev: the logs it encrypts outlive a
 * stack's removal.
 */
export function logsKey(scope: Construct, config: StageConfig): Key {
  const stack = Stack.of(scope);
  const key = new Key(scope, 'LogsKey', {
    description: `keyhaven ${(stack as Stack & { stage?: string }).stage ?? stack.stackName}: encrypts the stage's log groups`,
    enableKeyRotation: true,
    removalPolicy: config.isDev ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
  });
  key.addToResourcePolicy(
    new PolicyStatement({
      sid: 'CloudWatchLogsEncryptsLogGroups',
      principals: [new ServicePrincipal(`logs.${stack.region}.amazonaws.com`)],
      actions: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
      resources: ['*'],
      conditions: {
        ArnLike: {
          'kms:EncryptionContext:aws:logs:arn': `arn:${stack.partition}:logs:${stack.region}:${stack.account}:log-group:*`,
        },
      },
    }),
  );
  return key;
}

/** Puts every log group made under `scope` (SST's API access log groups among them) under the stage's logs key. */
export function encryptLogGroups(scope: Construct, key: IKey): void {
  for (const child of scope.node.findAll()) {
    if (child instanceof CfnLogGroup && child.kmsKeyId === undefined) child.kmsKeyId = key.keyArn;
  }
}
