import { ArnFormat, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { CfnLoggingConfiguration, CfnWebACL } from 'aws-cdk-lib/aws-wafv2';
import type { Construct } from 'constructs';

/** Requests one IP may make to the scheduler's login routes in 5 minutes before WAF blocks it (WAF's minimum is 10). */
export const loginRequestsPerIpPer5Minutes = 100;

/** The login routes the rate rule counts: `/v1/acl/login` and the OIDC flow under `/v1/acl/oidc/`. */
export const wafLoginPaths = ['/v1/acl/login', '/v1/acl/oidc/'] as const;

const visibility = (metricName: string) => ({ cloudWatchMetricsEnabled: true, metricName, sampledRequestsEnabled: true });

const managed = (name: string, priority: number, ruleActionOverrides?: CfnWebACL.RuleActionOverrideProperty[]): CfnWebACL.RuleProperty => ({
  name,
  priority,
  overrideAction: { none: {} },
  statement: { managedRuleGroupStatement: { vendorName: 'AWS', name, ...(ruleActionOverrides ? { ruleActionOverrides } : {}) } },
  visibilityConfig: visibility(name),
});

/**
 * The scheduler distribution's web ACL (CloudFront scope, so it must be made in us-east-1): a per-IP rate rule on the
 * login routes, then AWS's IP reputation list, known bad inputs and common rule set. The common set's 8 KB body limit
 * only counts (ACL policies and bodies of the scheduler may be larger); everything else it matches is blocked.
 */
export function schedulerWebAcl(scope: Construct, stage: string, retention: RetentionDays): CfnWebACL {
  const loginPath: CfnWebACL.StatementProperty = {
    orStatement: {
      statements: wafLoginPaths.map((path) => ({
        byteMatchStatement: {
          fieldToMatch: { uriPath: {} },
          positionalConstraint: 'STARTS_WITH',
          searchString: path,
          textTransformations: [{ priority: 0, type: 'NONE' }],
        },
      })),
    },
  };
  const acl = new CfnWebACL(scope, 'SchedulerWebAcl', {
    name: `keyhaven-${stage}-scheduler`,
    scope: 'CLOUDFRONT',
    defaultAction: { allow: {} },
    visibilityConfig: visibility(`keyhaven-${stage}-scheduler`),
    rules: [
      {
        name: 'LoginRatePerIp',
        priority: 0,
        action: { block: {} },
        statement: { rateBasedStatement: { limit: loginRequestsPerIpPer5Minutes, aggregateKeyType: 'IP', scopeDownStatement: loginPath } },
        visibilityConfig: visibility('LoginRatePerIp'),
      },
      managed('AWSManagedRulesAmazonIpReputationList', 1),
      managed('AWSManagedRulesKnownBadInputsRuleSet', 2),
      managed('AWSManagedRulesCommonRuleSet', 3, [{ name: 'SizeRestrictions_BODY', actionToUse: { count: {} } }]),
    ],
  });
  // WAF's log of every request it saw, without the headers that carry tokens (WAF logs headers otherwise).
  const logGroupName = `aws-waf-logs-keyhaven-${stage}-scheduler`;
  new LogGroup(scope, 'SchedulerWebAclLogs', { logGroupName, retention, removalPolicy: RemovalPolicy.RETAIN });
  new CfnLoggingConfiguration(scope, 'SchedulerWebAclLogging', {
    resourceArn: acl.attrArn,
    logDestinationConfigs: [
      Stack.of(scope).formatArn({ service: 'logs', resource: 'log-group', resourceName: logGroupName, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
    ],
    redactedFields: wafRedactedHeaders.map((name) => ({ singleHeader: { Name: name } })),
  }).node.addDependency(scope.node.findChild('SchedulerWebAclLogs'));
  return acl;
}

/** Headers WAF's log leaves out: every header a token travels in. */
export const wafRedactedHeaders = ['authorization', 'x-nomad-token', 'x-scheduler-token', 'x-vault-token', 'x-secrets-token', 'cookie'] as const;
