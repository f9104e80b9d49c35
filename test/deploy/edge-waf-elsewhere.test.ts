import { beforeAll, describe, expect, it } from 'vitest';
import { stageConfig } from '../../stacks/stage-config.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import { resourcesOf, single } from './template-queries.ts';

/**
 * Issue 25 (CFR2 outside us-east-1): a stage deployed in another region puts the web ACL its stage config names
 * (`edgeWebAclArn`, the us-east-1 deploy's output) on both distributions, and makes none of its own (CloudFront takes
 * only web ACLs made in us-east-1). Synthesis of `example-multi-region` in eu-west-1.
 */
let s: Synthesized;
beforeAll(async () => {
  s = await synthesize('example-multi-region', { region: 'eu-west-1' });
}, 180_000);

describe('the edge outside us-east-1 (synthesis of "example-multi-region" in eu-west-1)', () => {
  it('associates the named web ACL with both distributions and makes none', () => {
    const named = stageConfig('example-multi-region', 'eu-west-1').edgeWebAclArn;
    expect(named).toMatch(/^arn:aws:wafv2:us-east-1:/);
    expect(resourcesOf(s.edge, 'AWS::WAFv2::WebACL')).toEqual([]);
    for (const template of s.all) expect(resourcesOf(template, 'AWS::WAFv2::WebACL')).toEqual([]);
    for (const template of [s.secrets, s.scheduler])
      expect(single(template, 'AWS::CloudFront::Distribution').Properties.DistributionConfig.WebACLId).toBe(named);
  });

  it("serves each distribution under the region's own name with TLS 1.2 at least", () => {
    const domains = stageConfig('example-multi-region', 'eu-west-1').customDomains;
    for (const [template, domain] of [
      [s.secrets, domains?.secrets],
      [s.scheduler, domains?.scheduler],
    ] as const) {
      const config = single(template, 'AWS::CloudFront::Distribution').Properties.DistributionConfig;
      expect(config.Aliases).toEqual([domain?.domainName]);
      expect(config.ViewerCertificate.MinimumProtocolVersion).toBe('TLSv1.2_2021');
    }
  });
});
