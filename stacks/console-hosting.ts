import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import {
  AllowedMethods,
  type BehaviorOptions,
  CachePolicy,
  FunctionEventType,
  ResponseHeadersPolicy,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { S3BucketOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { consoleContentSecurityPolicy } from '../packages/ui/csp.ts';
import { accessLogBucket } from './access-logs.ts';
import { cloudFrontFunction, securityHeaders } from './edge-origin.ts';
import { customOrigin, type StageConfig } from './stage-config.ts';

/** The console's viewer-request function; relative to the project root, as SST runs. */
export const consolePathsFile = 'stacks/cloudfront/console-paths.js';

/** Where the console lives in its bucket and under the secrets distribution. */
export const consoleKeyPrefix = 'ui/';

/**
 * On a dev stage without `customDomains.scheduler` the scheduler's name is CloudFront's, known only after the
 * scheduler's stack is deployed, which itself names the console's origin (a cycle), so the console's
 * `connect-src` allows any CloudFront name there. Every other stage has the scheduler's own name (`checkEdge`).
 */
export const devSchedulerOrigin = 'https://*.cloudfront.net';

/** The scheduler origin the console may connect to: its own name, or on dev stages without one, `devSchedulerOrigin`. */
export const consoleSchedulerOrigin = (config: Pick<StageConfig, 'customDomains'>) =>
  customOrigin(config.customDomains?.scheduler) ?? devSchedulerOrigin;

/**
 * The console's bucket: private (no public access; only the secrets distribution reads it, through origin access
 * control), TLS only, versioned (a deploy's replaced files stay 30 days), with S3 server access logs into a bucket of
 * their own. SSE-S3: the files are the public web app, and origin access control reads SSE-KMS objects only with a
 * key policy for CloudFront.
 */
export function consoleBucket(scope: Construct, config: StageConfig): Bucket {
  return new Bucket(scope, 'ConsoleBucket', {
    encryption: BucketEncryption.S3_MANAGED,
    blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
    objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
    enforceSSL: true,
    versioned: true,
    lifecycleRules: [{ noncurrentVersionExpiration: Duration.days(30) }],
    serverAccessLogsBucket: accessLogBucket(scope, 'ConsoleAccessLogs', config, 's3'),
    serverAccessLogsPrefix: 'console-bucket/',
    removalPolicy: config.isDev ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    autoDeleteObjects: false,
  });
}

/**
 * The behaviours `/ui` and `/ui/*` of the secrets distribution: the console's files from its bucket (origin access
 * control; GET and HEAD only; cached, each deploy invalidates `/ui/*`), every extension-less path answered with
 * `ui/index.html` by a viewer-request function (`stacks/cloudfront/console-paths.js`; not an error-page mapping, which
 * would also rewrite the API's 404s), and a response-headers policy with the console's Content-Security-Policy
 * (`packages/ui/csp.ts`: scripts, styles and connections only to its own origin and the scheduler's, no framing), HSTS,
 * nosniff and no referrer.
 */
export function consoleBehaviors(
  scope: Construct,
  bucket: Bucket,
  config: StageConfig,
): Record<string, BehaviorOptions> {
  const behavior: BehaviorOptions = {
    origin: S3BucketOrigin.withOriginAccessControl(bucket),
    allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
    cachePolicy: CachePolicy.CACHING_OPTIMIZED,
    viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
    responseHeadersPolicy: new ResponseHeadersPolicy(scope, 'ConsoleSecurityHeaders', {
      comment: 'keyhaven console: Content-Security-Policy, HSTS, nosniff, no framing, no referrer',
      securityHeadersBehavior: {
        ...securityHeaders,
        contentSecurityPolicy: {
          contentSecurityPolicy: consoleContentSecurityPolicy(consoleSchedulerOrigin(config)),
          override: true,
        },
      },
    }),
    functionAssociations: [
      {
        eventType: FunctionEventType.VIEWER_REQUEST,
        function: cloudFrontFunction(
          scope,
          'ConsolePaths',
          'the console: extension-less paths under /ui/ are its page',
          consolePathsFile,
        ),
      },
    ],
  };
  return { '/ui': behavior, '/ui/*': behavior };
}
