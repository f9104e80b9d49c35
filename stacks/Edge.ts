import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { type StackContext, use } from 'sst/constructs';
import { checkEdge } from './stage-checks.ts';
import { Storage } from './Storage.ts';
import { edgeWebAcl } from './waf.ts';

/**
 * The web ACL of the stage's two CloudFront distributions (the secrets service with its console, and the scheduler).
 * CloudFront takes only web ACLs made in us-east-1, and SST v2 deploys every stack of a stage into the one region
 * given to `sst deploy` (it refuses a stack with an `env` of its own), so:
 * - deployed in us-east-1, this stack makes the web ACL (`stacks/waf.ts`) and outputs `EdgeWebAclArn`;
 * - deployed elsewhere, the stage config names an existing one (`edgeWebAclArn`: a us-east-1 deploy's output, such
 *   as the authoritative region's), and a stage outside dev without one does not synthesise (`checkEdge`).
 * The stage config's `edgeWebAclArn` wins in us-east-1 too (two stages may share one web ACL).
 */
export function Edge({ stack }: StackContext) {
  const { config, logsKey } = use(Storage);
  checkEdge(stack.stage, config);
  if (config.edgeWebAclArn) return { webAclArn: config.edgeWebAclArn };
  // A dev stage outside us-east-1 without edgeWebAclArn has no WAF (accepted in stacks/nag.ts).
  if (stack.region !== 'us-east-1') return { webAclArn: undefined };
  const retention = RetentionDays[config.logRetention.toUpperCase() as keyof typeof RetentionDays];
  const acl = edgeWebAcl(stack, stack.stage, retention, logsKey);
  stack.addOutputs({ EdgeWebAclArn: acl.attrArn });
  return { webAclArn: acl.attrArn, acl };
}
