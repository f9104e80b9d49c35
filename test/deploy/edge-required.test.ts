import { describe, expect, it } from 'vitest';
import { synthesize } from './synthesize.ts';

/**
 * Issue 25 (CFR2): a stage outside dev deployed outside us-east-1 without a web ACL to name does not synthesise (so it
 * cannot be deployed without a WAF). `example-custom-domain` is complete for us-east-1; in eu-west-1 it lacks one.
 */
describe('synthesis of a stage outside dev in eu-west-1 without edgeWebAclArn', () => {
  it('fails, naming the stage, the region and the field to set', async () => {
    await expect(synthesize('example-custom-domain', { region: 'eu-west-1' })).rejects.toThrow(
      /stage config: example-custom-domain is not a dev stage and is deployed in eu-west-1, where no CloudFront web ACL can be made: set edgeWebAclArn/,
    );
  }, 120_000);
});
