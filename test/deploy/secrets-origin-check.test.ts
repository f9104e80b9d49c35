import { readFileSync } from 'node:fs';
import { createContext, runInContext } from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import { originSecretHeader } from '../../functions/scheduler/origin-check.ts';
import { bearerToVaultTokenFile } from '../../stacks/SecretsApi.ts';
import { stageConfig } from '../../stacks/stage-config.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import { appFunctions, resourcesOf, single } from './template-queries.ts';
import { deployedEnvironment, httpApiEvent, invoke, secretsFunction } from './lambda-events.ts';

/**
 * Issue 25: the secrets API behind its own CloudFront distribution, and its own URL answering nothing. Attacker:
 * anonymous, or anyone holding a token, who calls the HTTP API's execute-api URL directly to skip what CloudFront
 * enforces (the WAF's login rate rule and managed rules, TLS 1.2, the security headers, the standard logs). Must
 * never reach: the secrets service.
 */
let s: Synthesized;
beforeAll(async () => {
  s = await synthesize('prod');
}, 180_000);

const distributionConfig = () => single(s.secrets, 'AWS::CloudFront::Distribution').Properties.DistributionConfig;

describe('the secrets distribution (synthesis of "prod")', () => {
  const secretReference = () => {
    const [secretId, secret] = resourcesOf(s.secrets, 'AWS::SecretsManager::Secret')[0] ?? [];
    expect(secret?.Properties.GenerateSecretString).toMatchObject({ PasswordLength: 48, ExcludePunctuation: true });
    expect(secret?.DeletionPolicy).toBe('Retain');
    return { 'Fn::Join': ['', ['{{resolve:secretsmanager:', { Ref: secretId }, ':SecretString:::}}']] };
  };

  it('sends every API path to the HTTP API with the generated origin secret, every method CloudFront forwards, nothing cached', () => {
    const config = distributionConfig();
    const api = config.Origins.find(
      (origin: { Id: string }) => origin.Id === config.DefaultCacheBehavior.TargetOriginId,
    );
    expect(api.OriginCustomHeaders).toEqual([{ HeaderName: originSecretHeader, HeaderValue: secretReference() }]);
    const [apiId] = resourcesOf(s.secrets, 'AWS::ApiGatewayV2::Api')[0] ?? [];
    expect(JSON.stringify(api.DomainName)).toContain(apiId);
    expect(api.CustomOriginConfig).toMatchObject({ OriginProtocolPolicy: 'https-only', OriginReadTimeout: 35 });
    // CloudFront forwards no other method: LIST must come as GET ?list=true (docs/deployment.md, "Access logs and the edge").
    expect(config.DefaultCacheBehavior.AllowedMethods).toEqual([
      'GET',
      'HEAD',
      'OPTIONS',
      'PUT',
      'PATCH',
      'POST',
      'DELETE',
    ]);
    expect(config.DefaultCacheBehavior.CachePolicyId).toBe('4135ea2d-6df8-44a3-9df3-4b5a84be39ad'); // CachingDisabled
    expect(config.DefaultCacheBehavior.ViewerProtocolPolicy).toBe('redirect-to-https');
    // The S3 origin of the console gets no secret.
    const others = config.Origins.filter((origin: { Id: string }) => origin.Id !== api.Id);
    for (const origin of others) expect(origin.OriginCustomHeaders).toBeUndefined();
  });

  it('gives every secrets function the same secret', () => {
    const functions = appFunctions(s.secrets);
    expect(functions.length).toBeGreaterThanOrEqual(6);
    for (const [id, fn] of functions)
      expect(fn.Properties.Environment.Variables.KEYHAVEN_ORIGIN_SECRET, id).toEqual(secretReference());
    expect(JSON.stringify(s.secrets.toJSON())).not.toMatch(/"HeaderValue":"[A-Za-z0-9]{48}"/);
  });

  it("serves the stage's own name with its certificate and TLS 1.2 at least, logs every request, and outputs the URL", () => {
    const domain = stageConfig('prod').customDomains?.secrets;
    const config = distributionConfig();
    expect(config.Aliases).toEqual([domain?.domainName]);
    expect(config.ViewerCertificate).toEqual({
      AcmCertificateArn: domain?.certificateArn,
      MinimumProtocolVersion: 'TLSv1.2_2021',
      SslSupportMethod: 'sni-only',
    });
    const [logsId] = resourcesOf(s.secrets, 'AWS::S3::Bucket').find(([id]) => id.startsWith('SecretsAccessLogs')) ?? [];
    expect(config.Logging).toEqual({
      Bucket: { 'Fn::GetAtt': [logsId, 'RegionalDomainName'] },
      Prefix: 'secrets-distribution/',
    });
    expect(s.secrets.toJSON().Outputs.SecretsUrl.Value).toBe(`https://${domain?.domainName}`);
  });

  it('adds HSTS, nosniff, no framing and no referrer to every API answer, and runs the Bearer function on every API request', () => {
    const config = distributionConfig();
    const [policyId, policy] =
      resourcesOf(s.secrets, 'AWS::CloudFront::ResponseHeadersPolicy').find(([id]) =>
        id.startsWith('SecretsSecurityHeaders'),
      ) ?? [];
    expect(policy?.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig).toEqual({
      StrictTransportSecurity: { AccessControlMaxAgeSec: 63_072_000, IncludeSubdomains: true, Override: true },
      ContentTypeOptions: { Override: true },
      FrameOptions: { FrameOption: 'DENY', Override: true },
      ReferrerPolicy: { ReferrerPolicy: 'no-referrer', Override: true },
    });
    expect(config.DefaultCacheBehavior.ResponseHeadersPolicyId).toEqual({ Ref: policyId });
    const [functionId, fn] =
      resourcesOf(s.secrets, 'AWS::CloudFront::Function').find(([id]) => id.startsWith('BearerToVaultToken')) ?? [];
    expect(fn?.Properties.FunctionCode).toBe(readFileSync(bearerToVaultTokenFile, 'utf8'));
    expect(config.DefaultCacheBehavior.FunctionAssociations).toEqual([
      { EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': [functionId, 'FunctionARN'] } },
    ]);
  });
});

/** The viewer-request function as CloudFront's cloudfront-js-2.0 runtime runs it (see bearer-to-nomad-token.test.ts). */
async function viewerRequest(headers: Record<string, string>) {
  const context = createContext({});
  runInContext(readFileSync(bearerToVaultTokenFile, 'utf8'), context, { filename: bearerToVaultTokenFile });
  const handler = runInContext('handler', context) as (
    event: unknown,
  ) => Promise<{ headers: Record<string, { value: string }> }>;
  return handler({
    version: '1.0',
    context: { eventType: 'viewer-request' },
    viewer: { ip: '198.51.100.7' },
    request: {
      method: 'GET',
      uri: '/v1/auth/token/lookup-self',
      querystring: {},
      headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), { value }])),
      cookies: {},
    },
  });
}

describe('the secrets functions without and with the origin header', () => {
  const secret = 'origin-secret-0123456789abcdefghijklmnopqrstuvwx';
  const viaCloudFront = { [originSecretHeader]: secret };

  it("anonymous caller of the execute-api URL: 403 in Vault's form before the service, nothing logged; through CloudFront: answered, Bearer included", async () => {
    await deployedEnvironment();
    process.env.KEYHAVEN_ORIGIN_SECRET = secret;
    const handler = await secretsFunction('system');
    const written: string[] = [];
    const [stdout, stderr] = [process.stdout.write.bind(process.stdout), process.stderr.write.bind(process.stderr)];
    const capture = (chunk: unknown) => written.push(String(chunk)) > 0;
    process.stdout.write = capture as typeof process.stdout.write;
    process.stderr.write = capture as typeof process.stderr.write;
    try {
      for (const [method, url] of [
        ['PUT', '/v1/sys/init'],
        ['GET', '/v1/sys/health'],
        ['GET', '/v1/auth/token/lookup-self'],
      ] as const) {
        for (const headers of [
          {},
          { [originSecretHeader]: `${secret.slice(0, -1)}X` },
          { [originSecretHeader]: 'origin' },
        ] as Array<Record<string, string>>) {
          const direct = await invoke(handler, httpApiEvent(method, url, { headers }));
          expect(direct.status, `${method} ${url}`).toBe(403);
          expect(direct.body).toEqual({
            errors: ['permission denied: this API answers only through its CloudFront distribution ({base_url})'],
          });
        }
      }
      process.stdout.write = stdout;
      process.stderr.write = stderr;
      expect(written).toEqual([]);
      // Nothing reached the service: init is still open to the first caller through CloudFront.
      const init = await invoke(handler, httpApiEvent('PUT', '/v1/sys/init', { headers: viaCloudFront, body: {} }));
      expect(init.status).toBe(200);
      const root = init.body.root_token as string;
      // GET with Authorization: Bearer, as CloudFront forwards it: without the function the header is dropped (403),
      // with it the token arrives as X-Vault-Token.
      const dropped = await invoke(
        handler,
        httpApiEvent('GET', '/v1/auth/token/lookup-self', { headers: viaCloudFront }),
      );
      expect(dropped.status).toBe(403);
      const copied = Object.fromEntries(
        Object.entries((await viewerRequest({ Authorization: `Bearer ${root}` })).headers).map(([name, { value }]) => [
          name,
          value,
        ]),
      );
      delete copied.authorization;
      const self = await invoke(
        handler,
        httpApiEvent('GET', '/v1/auth/token/lookup-self', { headers: { ...copied, ...viaCloudFront } }),
      );
      expect(self.status).toBe(200);
      expect(self.body.data.policies).toEqual(['root']);
      // Through CloudFront with the token but without the header (the raw URL): still refused.
      const raw = await invoke(
        handler,
        httpApiEvent('GET', '/v1/auth/token/lookup-self', { headers: { 'x-vault-token': root } }),
      );
      expect(raw.status).toBe(403);
    } finally {
      process.stdout.write = stdout;
      process.stderr.write = stderr;
      delete process.env.KEYHAVEN_ORIGIN_SECRET;
    }
  });

  it('the Bearer function keeps a token sent in X-Vault-Token or X-Secrets-Token, and ignores other schemes', async () => {
    expect(
      (await viewerRequest({ Authorization: 'Bearer abc', 'X-Vault-Token': 'mine' })).headers['x-vault-token'],
    ).toEqual({ value: 'mine' });
    expect(
      (await viewerRequest({ Authorization: 'Bearer abc', 'X-Secrets-Token': 'mine' })).headers['x-vault-token'],
    ).toBeUndefined();
    expect((await viewerRequest({ Authorization: 'Basic dXNlcjpwdw==' })).headers['x-vault-token']).toBeUndefined();
    expect((await viewerRequest({ authorization: 'bearer   spaced  ' })).headers['x-vault-token']).toEqual({
      value: 'spaced',
    });
  });
});
