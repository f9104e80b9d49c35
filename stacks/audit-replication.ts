import { Stack } from 'aws-cdk-lib';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { Bucket, CfnBucket } from 'aws-cdk-lib/aws-s3';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import type { AuditReplication } from './stage-config.ts';

const bucketArnForm = /^arn:aws[a-z-]*:s3:::[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const kmsKeyArnForm = /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[\w-]+$/;

/** The replication role's name, which the destination bucket's and key's policies name. */
export const auditReplicationRoleName = (stage: string) => `keyhaven-${stage}-audit-replication`;

/**
 * S3 replication of the audit bucket (`audit.replication` in the stage config): every new object version, with its
 * object-lock retention, into a bucket of another account (the replicas owned by that account), encrypted there under
 * its key. Delete markers are not replicated: the copy keeps what the source deletes. The role may read only this
 * bucket's versions, retention and legal holds, decrypt only under S3 with this bucket's key, and replicate and
 * encrypt only into the destination.
 */
export function replicateAuditBucket(
  scope: Construct,
  stage: string,
  bucket: Bucket,
  key: IKey,
  replication: AuditReplication,
): Role {
  if (!bucketArnForm.test(replication.bucketArn))
    throw new Error(`stage config: audit.replication.bucketArn "${replication.bucketArn}" is not an S3 bucket ARN`);
  if (!/^\d{12}$/.test(replication.account))
    throw new Error(`stage config: audit.replication.account "${replication.account}" is not an AWS account id`);
  if (!kmsKeyArnForm.test(replication.kmsKeyArn))
    throw new Error(`stage config: audit.replication.kmsKeyArn "${replication.kmsKeyArn}" is not a KMS key ARN`);
  const region = Stack.of(scope).region;
  const role = new Role(scope, 'AuditReplicationRole', {
    roleName: auditReplicationRoleName(stage),
    assumedBy: new ServicePrincipal('s3.amazonaws.com'),
    description: `keyhaven ${stage}: replicates the audit bucket into ${replication.bucketArn}`,
  });
  role.addToPolicy(
    new PolicyStatement({
      actions: ['s3:GetReplicationConfiguration', 's3:ListBucket'],
      resources: [bucket.bucketArn],
    }),
  );
  role.addToPolicy(
    new PolicyStatement({
      actions: [
        's3:GetObjectVersionForReplication',
        's3:GetObjectVersionAcl',
        's3:GetObjectVersionTagging',
        's3:GetObjectRetention',
        's3:GetObjectLegalHold',
      ],
      resources: [bucket.arnForObjects('*')],
    }),
  );
  role.addToPolicy(
    new PolicyStatement({
      actions: ['s3:ReplicateObject', 's3:ReplicateTags', 's3:ObjectOwnerOverrideToBucketOwner'],
      resources: [`${replication.bucketArn}/*`],
    }),
  );
  // The bucket key's context is the bucket's ARN.
  role.addToPolicy(
    new PolicyStatement({
      actions: ['kms:Decrypt'],
      resources: [key.keyArn],
      conditions: {
        StringEquals: {
          'kms:ViaService': `s3.${region}.amazonaws.com`,
          'kms:EncryptionContext:aws:s3:arn': bucket.bucketArn,
        },
      },
    }),
  );
  role.addToPolicy(
    new PolicyStatement({ actions: ['kms:Encrypt', 'kms:GenerateDataKey'], resources: [replication.kmsKeyArn] }),
  );
  NagSuppressions.addResourceSuppressions(
    role,
    [
      {
        id: 'AwsSolutions-IAM5',
        reason:
          '[by design] S3 replication reads every object version of the audit bucket and writes every replica into the destination: object ARNs /* of the two buckets.',
        appliesTo: [{ regex: '/^Resource::(<AuditBucket[0-9A-F]{8}\\.Arn>|arn:aws[a-z-]*:s3:::[a-z0-9.-]+)\\/\\*$/' }],
      },
    ],
    true,
  );
  const cfnBucket = bucket.node.defaultChild as CfnBucket;
  cfnBucket.replicationConfiguration = {
    role: role.roleArn,
    rules: [
      {
        id: 'audit-copy',
        status: 'Enabled',
        priority: 0,
        filter: { prefix: '' },
        deleteMarkerReplication: { status: 'Disabled' },
        sourceSelectionCriteria: { sseKmsEncryptedObjects: { status: 'Enabled' } },
        destination: {
          bucket: replication.bucketArn,
          account: replication.account,
          accessControlTranslation: { owner: 'Destination' },
          encryptionConfiguration: { replicaKmsKeyId: replication.kmsKeyArn },
        },
      },
    ],
  };
  return role;
}
