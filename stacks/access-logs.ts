import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import type { StageConfig } from './stage-config.ts';

/**
 * A bucket that receives access logs (S3 server access logs, CloudFront standard logs): S3-managed encryption (neither
 * service can write to a bucket under a customer key), no public access, TLS only, kept as long as the stage keeps
 * its audit trail and retained when the stack is deleted. Both writers need ACLs on the bucket: CloudFront's standard
 * logging writes objects with an ACL (bucket owner preferred), and CDK grants S3 server access logging the
 * `LogDeliveryWrite` canned ACL (the app sets no `@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy` flag), which S3
 * accepts only with object-writer ownership.
 */
export function accessLogBucket(
  scope: Construct,
  id: string,
  config: StageConfig,
  writer: 'cloudfront' | 's3',
): Bucket {
  return new Bucket(scope, id, {
    encryption: BucketEncryption.S3_MANAGED,
    blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
    enforceSSL: true,
    objectOwnership: writer === 'cloudfront' ? ObjectOwnership.BUCKET_OWNER_PREFERRED : ObjectOwnership.OBJECT_WRITER,
    lifecycleRules: [{ expiration: Duration.days(config.audit.retentionDays) }],
    removalPolicy: RemovalPolicy.RETAIN,
  });
}

/** The access log format of both HTTP APIs: who called what, the answer, and how long the function took. */
export const httpApiAccessLogFormat = JSON.stringify({
  requestTime: '$context.requestTime',
  requestId: '$context.requestId',
  httpMethod: '$context.httpMethod',
  path: '$context.path',
  routeKey: '$context.routeKey',
  status: '$context.status',
  responseLatency: '$context.responseLatency',
  integrationStatus: '$context.integration.status',
  integrationLatency: '$context.integration.latency',
  integrationError: '$context.integration.error',
  errorMessage: '$context.error.message',
  ip: '$context.identity.sourceIp',
  userAgent: '$context.identity.userAgent',
});
