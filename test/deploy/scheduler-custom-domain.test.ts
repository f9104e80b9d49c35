import { beforeAll, describe, expect, it } from 'vitest';
import { stageConfig } from '../../stacks/stage-config.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import { single } from './template-queries.ts';

/** Issue 25 (CFR4): with its own certificate, the scheduler's distribution refuses viewers below TLS 1.2. */
describe('the scheduler distribution with its own domain (stage "example-custom-domain")', () => {
  let s: Synthesized;
  beforeAll(async () => {
    s = await synthesize('example-custom-domain');
  }, 180_000);

  it('serves the domain with its certificate, SNI only, TLS 1.2 at least', () => {
    const domain = stageConfig('example-custom-domain').customDomains?.scheduler;
    const config = single(s.scheduler, 'AWS::CloudFront::Distribution').Properties.DistributionConfig;
    expect(config.Aliases).toEqual([domain?.domainName]);
    expect(config.ViewerCertificate).toEqual({ AcmCertificateArn: domain?.certificateArn, MinimumProtocolVersion: 'TLSv1.2_2021', SslSupportMethod: 'sni-only' });
  });
});
