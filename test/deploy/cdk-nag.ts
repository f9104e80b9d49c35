import { Aspects } from 'aws-cdk-lib';
import { AwsSolutionsChecks, NIST80053R5Checks, ServerlessChecks } from 'cdk-nag';
import type { App } from 'sst/constructs';
import { synthesize } from './synthesize.ts';

/**
 * Synthesises a stage once with cdk-nag's AwsSolutions, Serverless and NIST 800-53 R5 packs and returns every error
 * and warning they left, read from the stack artifacts of that one assembly (`Annotations.fromStack` would synthesise
 * again, which SST's aspects refuse). Suppressed findings (stacks/nag.ts) are not among them.
 */
export async function nagFindingsOf(stage: string, region = 'us-east-1'): Promise<string[]> {
  let synthesized: App | undefined;
  await synthesize(stage, {
    region,
    beforeFinish: (app) => {
      synthesized = app;
      for (const pack of [
        new AwsSolutionsChecks({ verbose: true }),
        new ServerlessChecks({ verbose: true }),
        new NIST80053R5Checks({ verbose: true }),
      ]) {
        Aspects.of(app).add(pack);
      }
    },
  });
  if (!synthesized) throw new Error('the app was not synthesised');
  const findings: string[] = [];
  for (const stack of synthesized.synth().stacks) {
    for (const message of stack.messages) {
      // cdk-nag's findings only (CDK's own warnings, such as imported subnets without route tables, are not rules).
      const text = String(message.entry.data);
      if (
        (message.level === 'error' || message.level === 'warning') &&
        /^(AwsSolutions|Serverless|NIST\.800\.53\.R5)-/.test(text)
      ) {
        findings.push(`${message.id}: ${text}`);
      }
    }
  }
  return findings;
}
