import { expect, it } from 'vitest';
import { nagFindingsOf } from './cdk-nag.ts';

/** Issue 25: AWS's rule packs over stage "example-multi-region" in its replica region; stacks/nag.ts lists what is accepted. */
it('leaves no finding of the three packs that stacks/nag.ts does not accept with a reason (stage "example-multi-region", eu-west-1)', async () => {
  expect(await nagFindingsOf('example-multi-region', 'eu-west-1')).toEqual([]);
}, 300_000);
