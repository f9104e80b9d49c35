import { beforeAll, describe, expect, it } from 'vitest';
import { originSecretHeader } from '../../functions/scheduler/origin-check.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import { appFunctions, resourcesOf, single } from './template-queries.ts';
import { deployedEnvironment, httpApiEvent, invoke } from './lambda-events.ts';

/**
 * Issue 25: the scheduler API's own URL answers nothing. Attacker: anonymous, or anyone holding a token, who calls the
 * HTTP API's execute-api URL directly to skip what CloudFront enforces (the WAF's per-IP login rate rule and managed
 * rules, TLS 1.2, the security headers, the standard logs). Must never reach: the scheduler app.
 */
let s: Synthesized;
beforeAll(async () => {
  s = await synthesize('prod');
}, 180_000);

describe('the scheduler origin check (synthesis of "prod")', () => {
  const secretReference = () => {
    const [secretId, secret] = resourcesOf(s.scheduler, 'AWS::SecretsManager::Secret')[0] ?? [];
    expect(secret?.Properties.GenerateSecretString).toMatchObject({ PasswordLength: 48, ExcludePunctuation: true });
    return { 'Fn::Join': ['', ['{{resolve:secretsmanager:', { Ref: secretId }, ':SecretString:::}}']] };
  };

  it('CloudFront sends the generated secret as a custom header to the HTTP API origin, and only there', () => {
    const { DistributionConfig } = single(s.scheduler, 'AWS::CloudFront::Distribution').Properties;
    const defaultOrigin = DistributionConfig.Origins.find(
      (origin: { Id: string }) => origin.Id === DistributionConfig.DefaultCacheBehavior.TargetOriginId,
    );
    expect(defaultOrigin.OriginCustomHeaders).toEqual([
      { HeaderName: originSecretHeader, HeaderValue: secretReference() },
    ]);
    const streamOrigin = DistributionConfig.Origins.find((origin: { Id: string }) => origin.Id !== defaultOrigin.Id);
    expect(streamOrigin.OriginCustomHeaders).toBeUndefined();
  });

  it('the API function gets the same secret; the secret has its own rotating key and is retained outside dev', () => {
    const [, api] =
      appFunctions(s.scheduler).find(([, fn]) => fn.Properties.Handler === 'functions/scheduler/api.handler') ?? [];
    expect(api?.Properties.Environment.Variables.KEYHAVEN_ORIGIN_SECRET).toEqual(secretReference());
    const [secretId, secret] = resourcesOf(s.scheduler, 'AWS::SecretsManager::Secret')[0] ?? [];
    expect(secretId).toBeDefined();
    expect(secret?.DeletionPolicy).toBe('Retain');
    const [keyId, key] =
      resourcesOf(s.scheduler, 'AWS::KMS::Key').find(([, k]) =>
        String(k.Properties.Description).includes('origin secret'),
      ) ?? [];
    expect(secret?.Properties.KmsKeyId).toEqual({ 'Fn::GetAtt': [keyId, 'Arn'] });
    expect(key?.Properties.EnableKeyRotation).toBe(true);
    // The value itself is nowhere in the template.
    expect(JSON.stringify(s.scheduler.toJSON())).not.toMatch(/"HeaderValue":"[A-Za-z0-9]{48}"/);
  });
});

describe('the scheduler API function without and with the origin header', () => {
  it('anonymous caller of the execute-api URL: 403 before the app, for any route; through CloudFront: answered', async () => {
    await deployedEnvironment();
    process.env.KEYHAVEN_ORIGIN_SECRET = 'origin-secret-0123456789abcdefghijklmnopqrstuvwx';
    const { handler } = await import('../../functions/scheduler/api.ts');
    // Whatever the function writes (its JSON log lines go to stdout, the runtime's errors to stderr) while refusing.
    const written: string[] = [];
    const [stdout, stderr] = [process.stdout.write.bind(process.stdout), process.stderr.write.bind(process.stderr)];
    const capture = (chunk: unknown) => written.push(String(chunk)) > 0;
    process.stdout.write = capture as typeof process.stdout.write;
    process.stderr.write = capture as typeof process.stderr.write;
    try {
      for (const [method, url] of [
        ['POST', '/v1/acl/bootstrap'],
        ['POST', '/v1/acl/login'],
        ['GET', '/v1/acl/token/self'],
      ] as const) {
        const direct = await invoke(handler, httpApiEvent(method, url));
        expect(direct.status, `${method} ${url}`).toBe(403);
        expect(direct.body).toBe(
          'Permission denied: this API answers only through its CloudFront distribution ({scheduler_url})',
        );
        const wrong = await invoke(
          handler,
          httpApiEvent(method, url, {
            headers: { [originSecretHeader]: 'origin-secret-0123456789abcdefghijklmnopqrstuvwX' },
          }),
        );
        expect(wrong.status).toBe(403);
        const short = await invoke(handler, httpApiEvent(method, url, { headers: { [originSecretHeader]: 'origin' } }));
        expect(short.status).toBe(403);
      }
      process.stdout.write = stdout;
      process.stderr.write = stderr;
      expect(written).toEqual([]);
      // Nothing reached the app: bootstrap is still open to the first caller through CloudFront.
      const viaCloudFront = { headers: { [originSecretHeader]: process.env.KEYHAVEN_ORIGIN_SECRET } };
      const bootstrap = await invoke(handler, httpApiEvent('POST', '/v1/acl/bootstrap', viaCloudFront));
      expect(bootstrap.status).toBe(200);
      const self = await invoke(
        handler,
        httpApiEvent('GET', '/v1/acl/token/self', {
          headers: { ...viaCloudFront.headers, 'x-scheduler-token': bootstrap.body.SecretID },
        }),
      );
      expect(self.status).toBe(200);
      expect(self.body).toMatchObject({ Type: 'management' });
      const withoutHeader = await invoke(
        handler,
        httpApiEvent('GET', '/v1/acl/token/self', { headers: { 'x-scheduler-token': bootstrap.body.SecretID } }),
      );
      expect(withoutHeader.status).toBe(403);
    } finally {
      process.stdout.write = stdout;
      process.stderr.write = stderr;
      delete process.env.KEYHAVEN_ORIGIN_SECRET;
    }
  });
});
