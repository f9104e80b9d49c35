import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { auditLinePattern } from '../../stacks/Audit.ts';
import { declaredMountsEnv, stageConfig } from '../../stacks/stage-config.ts';
import { deployedEnvironment, httpApiEvent, invoke, secretsFunction } from './lambda-events.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import { appFunctions, resourcesOf, single } from './template-queries.ts';

/** The filter pattern's clauses, `$.field = "value"` joined by `||`, as CloudWatch Logs evaluates them on a JSON line. */
function matchesPattern(pattern: string, line: string): boolean {
  const clauses = [...pattern.matchAll(/\$\.(\w+) = "([^"]*)"/g)].map(([, field, value]) => [
    field as string,
    value as string,
  ]);
  expect(pattern.replace(/\(\$\.\w+ = "[^"]*"\)/g, 'C')).toBe('{ C || C || C }');
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(line);
  } catch {
    return false;
  }
  return clauses.some(([field, value]) => parsed[field as string] === value);
}

describe('audit destination on AWS', () => {
  let s: Synthesized;
  beforeAll(async () => {
    s = await synthesize('test');
  }, 180_000);

  it('keeps audit lines in an encrypted, versioned, object-locked bucket that outlives the stack', () => {
    // The audit bucket (the stack also holds the bucket of its access logs, test/deploy/operations.test.ts).
    const [, bucket] = resourcesOf(s.audit, 'AWS::S3::Bucket').find(([id]) => id.startsWith('AuditBucket')) ?? [];
    if (!bucket) throw new Error('no audit bucket');
    expect(bucket.DeletionPolicy).toBe('Retain');
    const { retentionDays, lockMode } = stageConfig('test').audit;
    expect(bucket.Properties).toMatchObject({
      VersioningConfiguration: { Status: 'Enabled' },
      ObjectLockEnabled: true,
      ObjectLockConfiguration: {
        ObjectLockEnabled: 'Enabled',
        Rule: { DefaultRetention: { Mode: lockMode.toUpperCase(), Days: retentionDays } },
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [
          { ServerSideEncryptionByDefault: { SSEAlgorithm: 'aws:kms' }, BucketKeyEnabled: true },
        ],
      },
    });
    expect(stageConfig('prod').audit).toMatchObject({ lockMode: 'compliance' });
  });

  it('delivers through Firehose: CloudWatch envelopes unzipped, each line kept as written, gzip into the bucket', () => {
    const stream = single(s.audit, 'AWS::KinesisFirehose::DeliveryStream');
    const destination = stream.Properties.ExtendedS3DestinationConfiguration;
    expect(destination.CompressionFormat).toBe('GZIP');
    expect(destination.ProcessingConfiguration.Processors.map((processor: { Type: string }) => processor.Type)).toEqual(
      ['Decompression', 'CloudWatchLogProcessing'],
    );
    expect(destination.EncryptionConfiguration.KMSEncryptionConfig.AWSKMSKeyARN).toBeDefined();
  });

  it('subscribes every request-serving function (each secrets family and the scheduler API) with the audit-line filter', () => {
    const filters = resourcesOf(s.audit, 'AWS::Logs::SubscriptionFilter');
    const requestFunctions = appFunctions(s.secrets).length + 1;
    expect(filters).toHaveLength(requestFunctions);
    for (const [, filter] of filters) expect(filter.Properties.FilterPattern).toBe(auditLinePattern.logPatternString);
    const schedulerApi = appFunctions(s.scheduler).find(
      ([, fn]) => fn.Properties.Handler === 'functions/scheduler/api.handler',
    )?.[1];
    expect(schedulerApi?.Properties.Environment.Variables.KEYHAVEN_SCHEDULER_AUDIT).toBe('stdout');
  });

  describe('the functions write exactly the lines the filter keeps', () => {
    const written: string[] = [];
    beforeAll(async () => {
      await deployedEnvironment();
      process.env.KEYHAVEN_DECLARED_MOUNTS = declaredMountsEnv([{ path: 'secret', type: 'kv' }]);
      vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        written.push(
          ...String(chunk)
            .split('\n')
            .filter((line) => line !== ''),
        );
        return true;
      });
    });
    afterAll(() => {
      vi.restoreAllMocks();
      delete process.env.KEYHAVEN_DECLARED_MOUNTS;
    });

    it('with a stdout audit device enabled, the kv function writes hashed request and response entries; operational lines do not match', async () => {
      const system = await secretsFunction('system');
      const kv = await secretsFunction('kv');
      const root = (await invoke(system, httpApiEvent('PUT', '/v1/sys/init', { body: {} }))).body.root_token as string;
      const headers = { 'x-secrets-token': root };
      expect(
        (await invoke(system, httpApiEvent('POST', '/v1/sys/mounts/secret', { headers, body: { type: 'kv' } }))).status,
      ).toBe(204);
      const enable = await invoke(
        system,
        httpApiEvent('PUT', '/v1/sys/audit/stdout', {
          headers,
          body: { type: 'file', options: { file_path: 'stdout' } },
        }),
      );
      expect(enable.status).toBe(204);
      expect(
        (
          await invoke(
            kv,
            httpApiEvent('POST', '/v1/secret/app', { headers, body: { password: 'lambda-audit-secret' } }),
          )
        ).status,
      ).toBe(204);

      const pattern = auditLinePattern.logPatternString;
      const kept = written.filter((line) => matchesPattern(pattern, line));
      const entries = kept.map((line) => JSON.parse(line)).filter((entry) => entry.request?.path === 'secret/app');
      expect(entries.map((entry) => entry.type)).toEqual(['request', 'response']);
      expect(entries[0].request.data.password).toMatch(/^hmac-sha256:/);
      expect(kept.join('\n')).not.toContain('lambda-audit-secret');
      expect(kept.join('\n')).not.toContain(root);
      const operational = written.filter((line) => line.includes('"message":"request"'));
      expect(operational.length).toBeGreaterThan(0);
      expect(operational.some((line) => matchesPattern(pattern, line))).toBe(false);
    });
  });
});
