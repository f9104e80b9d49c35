import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { App } from 'sst/constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { consoleContentSecurityPolicy } from '../../packages/ui/csp.ts';
import { consolePathsFile } from '../../stacks/console-hosting.ts';
import { stageConfig } from '../../stacks/stage-config.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import { appFunctions, resourcesOf, single } from './template-queries.ts';

/**
 * Issue 26 on AWS: the console under `/ui/` of the secrets distribution, from a private bucket, with its
 * Content-Security-Policy; its files and `ui/config.json` deployed after both APIs; the scheduler answering CORS for
 * the console's origin. Synthesis of `prod` (both services have their own names).
 */
let s: Synthesized;
let outdir = '';
beforeAll(async () => {
  s = await synthesize('prod', { beforeFinish: (app: App) => (outdir = app.outdir) });
}, 180_000);

const config = stageConfig('prod');
const secretsOrigin = `https://${config.customDomains?.secrets?.domainName}`;
const schedulerOrigin = `https://${config.customDomains?.scheduler?.domainName}`;
const distributionConfig = () => single(s.secrets, 'AWS::CloudFront::Distribution').Properties.DistributionConfig;
const behaviors = () =>
  distributionConfig().CacheBehaviors.filter((behavior: { PathPattern: string }) =>
    behavior.PathPattern.startsWith('/ui'),
  );

describe('the console behaviours of the secrets distribution', () => {
  it('serves /ui and /ui/* from the console bucket through origin access control: GET and HEAD, HTTPS, cached', () => {
    const [bucketId] = resourcesOf(s.secrets, 'AWS::S3::Bucket').find(([id]) => id.startsWith('ConsoleBucket')) ?? [];
    const [oacId, oac] = resourcesOf(s.secrets, 'AWS::CloudFront::OriginAccessControl')[0] ?? [];
    expect(oac?.Properties.OriginAccessControlConfig).toMatchObject({
      OriginAccessControlOriginType: 's3',
      SigningBehavior: 'always',
      SigningProtocol: 'sigv4',
    });
    expect(behaviors().map((behavior: { PathPattern: string }) => behavior.PathPattern)).toEqual(['/ui', '/ui/*']);
    for (const behavior of behaviors()) {
      const origin = distributionConfig().Origins.find((o: { Id: string }) => o.Id === behavior.TargetOriginId);
      expect(origin.DomainName).toEqual({ 'Fn::GetAtt': [bucketId, 'RegionalDomainName'] });
      expect(origin.OriginAccessControlId).toEqual({ 'Fn::GetAtt': [oacId, 'Id'] });
      expect(behavior).toMatchObject({
        AllowedMethods: ['GET', 'HEAD'],
        ViewerProtocolPolicy: 'redirect-to-https',
        CachePolicyId: '658327ea-f89d-4fab-a63d-7e88639e58f6',
      });
    }
    // The API stays the default behaviour: its 404s are never rewritten (no error-page mapping).
    expect(distributionConfig().CustomErrorResponses).toBeUndefined();
  });

  it('rewrites paths with the console-paths function (the file its own test runs)', () => {
    const [functionId, fn] =
      resourcesOf(s.secrets, 'AWS::CloudFront::Function').find(([id]) => id.startsWith('ConsolePaths')) ?? [];
    expect(fn?.Properties.FunctionCode).toBe(readFileSync(consolePathsFile, 'utf8'));
    expect(fn?.Properties.FunctionConfig.Runtime).toBe('cloudfront-js-2.0');
    for (const behavior of behaviors()) {
      expect(behavior.FunctionAssociations).toEqual([
        { EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [functionId, 'FunctionARN'] } },
      ]);
    }
  });

  it("answers with the console's Content-Security-Policy (packages/ui/csp.ts, naming the scheduler's own origin), HSTS, nosniff, no framing", () => {
    const [policyId, policy] =
      resourcesOf(s.secrets, 'AWS::CloudFront::ResponseHeadersPolicy').find(([id]) =>
        id.startsWith('ConsoleSecurityHeaders'),
      ) ?? [];
    const headers = policy?.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig;
    expect(headers.ContentSecurityPolicy).toEqual({
      ContentSecurityPolicy: consoleContentSecurityPolicy(schedulerOrigin),
      Override: true,
    });
    expect(headers.ContentSecurityPolicy.ContentSecurityPolicy).toContain(`connect-src 'self' ${schedulerOrigin}`);
    expect(headers.ContentSecurityPolicy.ContentSecurityPolicy).toContain("frame-ancestors 'none'");
    expect(headers).toMatchObject({
      StrictTransportSecurity: { AccessControlMaxAgeSec: 63_072_000, IncludeSubdomains: true, Override: true },
      ContentTypeOptions: { Override: true },
      FrameOptions: { FrameOption: 'DENY', Override: true },
      ReferrerPolicy: { ReferrerPolicy: 'no-referrer', Override: true },
    });
    for (const behavior of behaviors()) expect(behavior.ResponseHeadersPolicyId).toEqual({ Ref: policyId });
  });
});

describe('the console bucket', () => {
  it('is private, TLS only, versioned, logged, and readable only by this distribution', () => {
    const [bucketId, bucket] =
      resourcesOf(s.secrets, 'AWS::S3::Bucket').find(([id]) => id.startsWith('ConsoleBucket')) ?? [];
    const [logsId] = resourcesOf(s.secrets, 'AWS::S3::Bucket').find(([id]) => id.startsWith('ConsoleAccessLogs')) ?? [];
    expect(bucket?.Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(bucket?.Properties.VersioningConfiguration).toEqual({ Status: 'Enabled' });
    expect(bucket?.Properties.LoggingConfiguration).toEqual({
      DestinationBucketName: { Ref: logsId },
      LogFilePrefix: 'console-bucket/',
    });
    expect(bucket?.DeletionPolicy).toBe('Retain');
    const [distributionId] = resourcesOf(s.secrets, 'AWS::CloudFront::Distribution')[0] ?? [];
    const policy = resourcesOf(s.secrets, 'AWS::S3::BucketPolicy').find(
      ([, p]) => p.Properties.Bucket.Ref === bucketId,
    )?.[1];
    const statements = policy?.Properties.PolicyDocument.Statement;
    expect(statements).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
    const allows = statements.filter((statement: { Effect: string }) => statement.Effect === 'Allow');
    expect(allows).toEqual([
      {
        Effect: 'Allow',
        Principal: { Service: 'cloudfront.amazonaws.com' },
        Action: 's3:GetObject',
        Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/*']] },
        Condition: {
          StringEquals: {
            'AWS:SourceArn': {
              'Fn::Join': [
                '',
                [
                  'arn:',
                  { Ref: 'AWS::Partition' },
                  ':cloudfront::',
                  { Ref: 'AWS::AccountId' },
                  ':distribution/',
                  { Ref: distributionId },
                ],
              ],
            },
          },
        },
      },
    ]);
  });
});

describe('the console deployment (its own stack, after both APIs)', () => {
  const deployment = () => single(s.console, 'Custom::CDKBucketDeployment').Properties;
  const stagedAsset = (name: string) =>
    (deployment().SourceObjectKeys as string[])
      .map((key) => path.join(outdir, `asset.${key.replace(/\.zip$/, '')}`, name))
      .find((file) => existsSync(file));

  it("puts buildConsole's files and config.json under ui/, removes older files, invalidates /ui/*", () => {
    expect(deployment()).toMatchObject({
      DestinationBucketKeyPrefix: 'ui/',
      Prune: true,
      DistributionPaths: ['/ui/*'],
    });
    for (const file of ['index.html', 'app.js', 'app.css']) expect(stagedAsset(file), file).toBeDefined();
    expect(readFileSync(stagedAsset('index.html') as string, 'utf8')).toMatch(/<html/i);
    expect(JSON.parse(readFileSync(stagedAsset('config.json') as string, 'utf8'))).toEqual({
      secretsUrl: '',
      schedulerUrl: schedulerOrigin,
    });
  });

  it('deploys with a role that may only read the sources, write and delete under ui/, and invalidate this distribution', () => {
    const role = single(s.console, 'AWS::IAM::Policy').Properties.PolicyDocument.Statement.map(
      (statement: { Action: unknown }) => statement.Action,
    );
    expect(role).toEqual([
      's3:GetObject',
      's3:ListBucket',
      ['s3:PutObject', 's3:DeleteObject'],
      ['cloudfront:CreateInvalidation', 'cloudfront:GetInvalidation'],
    ]);
  });
});

describe('the scheduler answers the console (CORS)', () => {
  it("gives both scheduler functions the console calls the console's origin, the secrets service's own name; the client protocol's none", () => {
    const functions = appFunctions(s.scheduler);
    const isClient = ([, fn]: (typeof functions)[number]) =>
      fn.Properties.Handler === 'functions/scheduler/client.handler';
    const consoleFacing = functions.filter((entry) => !isClient(entry));
    expect(consoleFacing).toHaveLength(2);
    for (const [id, fn] of consoleFacing)
      expect(fn.Properties.Environment.Variables.KEYHAVEN_CONSOLE_ORIGINS, id).toBe(secretsOrigin);
    // The agents' function (its own Function URL) is never called from a browser: it answers no CORS.
    const client = functions.filter(isClient);
    expect(client).toHaveLength(1);
    expect(client[0]?.[1].Properties.Environment?.Variables?.KEYHAVEN_CONSOLE_ORIGINS).toBeUndefined();
  });

  it('passes Origin and OPTIONS through its distribution, the event stream included', () => {
    const distribution = single(s.scheduler, 'AWS::CloudFront::Distribution').Properties.DistributionConfig;
    for (const behavior of [distribution.DefaultCacheBehavior, ...distribution.CacheBehaviors]) {
      expect(behavior.AllowedMethods).toContain('OPTIONS');
      // Managed policy AllViewerExceptHostHeader: every viewer header, Origin and Access-Control-Request-* included.
      expect(behavior.OriginRequestPolicyId).toBe('b689b0a8-53d0-40ab-baf2-68738e2966ac');
    }
  });
});
