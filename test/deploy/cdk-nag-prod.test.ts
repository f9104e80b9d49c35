import { expect, it } from 'vitest';
import { nagFindingsOf } from './cdk-nag.ts';

/** Issue 25: AWS's rule packs (cdk-nag AwsSolutions, Serverless, NIST 800-53 R5) over stage "prod"; stacks/nag.ts lists what is accepted, and why. */
it('leaves no finding of the three packs that stacks/nag.ts does not accept with a reason (stage "prod")', async () => {
  expect(await nagFindingsOf('prod')).toEqual([]);
}, 300_000);
