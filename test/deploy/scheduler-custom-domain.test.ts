import { beforeAll, describe, expect, it } from 'vitest';
import { stageConfig } from '../../stacks/stage-config.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import { single } from './template-queries.ts';

/** Issue 25 (CFR4): with their own certificates, both distributions refuse viewers below TLS 1.2. */
describe('the distributions with their own domains (stage "example-custom-domain")', () => {
  let s: Synthesized;
  beforeAll(async () => {
    s = await synthesize('example-custom-domain');
  }, 180_000);

  it('serves each domain with its certificate, SNI only, TLS 1.2 at least, and outputs the URLs', () => {
    const domains = stageConfig('example-custom-domain').customDomains;
    for (const [template, domain, output] of [
      [s.secrets, domains?.secrets, 'SecretsUrl'],
      [s.scheduler, domains?.scheduler, 'SchedulerUrl'],
    ] as const) {
      const config = single(template, 'AWS::CloudFront::Distribution').Properties.DistributionConfig;
      expect(config.Aliases).toEqual([domain?.domainName]);
      expect(config.ViewerCertificate).toEqual({
        AcmCertificateArn: domain?.certificateArn,
        MinimumProtocolVersion: 'TLSv1.2_2021',
        SslSupportMethod: 'sni-only',
      });
      expect(template.toJSON().Outputs[output].Value).toBe(`https://${domain?.domainName}`);
    }
    expect(s.console.toJSON().Outputs.ConsoleUrl.Value).toBe(`https://${domains?.secrets?.domainName}/ui/`);
  });
});
