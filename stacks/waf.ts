import { ArnFormat, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { CfnLoggingConfiguration, CfnWebACL } from 'aws-cdk-lib/aws-wafv2';
import type { Construct } from 'constructs';

/** Requests one IP may make to the login routes of both services in 5 minutes before WAF blocks it (WAF's minimum is 10). */
export const loginRequestsPerIpPer5Minutes = 100;

/** The scheduler's login routes the rate rule counts (prefixes): `/v1/acl/login` and the OIDC flow under `/v1/acl/oidc/`. */
export const wafLoginPaths = ['/v1/acl/login', '/v1/acl/oidc/'] as const;

/**
 * The secrets service's login routes the rate rule counts: `/v1/auth/<mount>/login` and everything under
 * `/v1/auth/<mount>/oidc/` (`auth_url`, `callback`), for any mount of any depth.
 */
export const wafSecretsLoginPattern = '^/v1/auth/.+/(login|oidc/.+)$';

/**
 * Rules of AWS's common rule set that look into request bodies for script, file-inclusion and metadata-address
 * patterns, and its 8 KB body limit: a secret's value (a certificate, a script, a URL), a policy or an ACL body is the
 * caller's own data, which WAF must not judge, so these only count. Everything else the set matches is blocked.
 */
export const countedCommonRules = [
  'SizeRestrictions_BODY',
  'CrossSiteScripting_BODY',
  'GenericLFI_BODY',
  'GenericRFI_BODY',
  'EC2MetaDataSSRF_BODY',
] as const;

/** Headers WAF's log leaves out: every header a token travels in. */
export const wafRedactedHeaders = [
  'authorization',
  'x-nomad-token',
  'x-scheduler-token',
  'x-vault-token',
  'x-secrets-token',
  'cookie',
] as const;

/** The name of a stage's edge web ACL and of its log group (WAF requires the `aws-waf-logs-` prefix). */
export const edgeWebAclName = (stage: string) => `keyhaven-${stage}-edge`;
export const edgeWebAclLogGroupName = (stage: string) => `aws-waf-logs-keyhaven-${stage}-edge`;

const visibility = (metricName: string) => ({
  cloudWatchMetricsEnabled: true,
  metricName,
  sampledRequestsEnabled: true,
});

const managed = (
  name: string,
  priority: number,
  ruleActionOverrides?: CfnWebACL.RuleActionOverrideProperty[],
): CfnWebACL.RuleProperty => ({
  name,
  priority,
  overrideAction: { none: {} },
  statement: {
    managedRuleGroupStatement: { vendorName: 'AWS', name, ...(ruleActionOverrides ? { ruleActionOverrides } : {}) },
  },
  visibilityConfig: visibility(name),
});

// The path as the services route it: `%6cogin` is `login` to them, so WAF decodes before it compares.
const decoded = [{ priority: 0, type: 'URL_DECODE' }];

/**
 * The web ACL of both distributions (CloudFront scope, so it must be made in us-east-1): a per-IP rate rule on the
 * login routes of both services, then AWS's IP reputation list, known bad inputs and common rule set (with the body
 * rules of `countedCommonRules` only counting). WAF logs every request into a log group under the stage's logs key,
 * without the headers that carry tokens.
 */
export function edgeWebAcl(scope: Construct, stage: string, retention: RetentionDays, logsKey: IKey): CfnWebACL {
  const loginPath: CfnWebACL.StatementProperty = {
    orStatement: {
      statements: [
        ...wafLoginPaths.map((path) => ({
          byteMatchStatement: {
            fieldToMatch: { uriPath: {} },
            positionalConstraint: 'STARTS_WITH',
            searchString: path,
            textTransformations: decoded,
          },
        })),
        {
          regexMatchStatement: {
            fieldToMatch: { uriPath: {} },
            regexString: wafSecretsLoginPattern,
            textTransformations: decoded,
          },
        },
      ],
    },
  };
  const acl = new CfnWebACL(scope, 'EdgeWebAcl', {
    name: edgeWebAclName(stage),
    scope: 'CLOUDFRONT',
    defaultAction: { allow: {} },
    visibilityConfig: visibility(edgeWebAclName(stage)),
    rules: [
      {
        name: 'LoginRatePerIp',
        priority: 0,
        action: { block: {} },
        statement: {
          rateBasedStatement: {
            limit: loginRequestsPerIpPer5Minutes,
            aggregateKeyType: 'IP',
            scopeDownStatement: loginPath,
          },
        },
        visibilityConfig: visibility('LoginRatePerIp'),
      },
      managed('AWSManagedRulesAmazonIpReputationList', 1),
      managed('AWSManagedRulesKnownBadInputsRuleSet', 2),
      managed(
        'AWSManagedRulesCommonRuleSet',
        3,
        countedCommonRules.map((name) => ({ name, actionToUse: { count: {} } })),
      ),
    ],
  });
  const logGroupName = edgeWebAclLogGroupName(stage);
  const logGroup = new LogGroup(scope, 'EdgeWebAclLogs', {
    logGroupName,
    retention,
    encryptionKey: logsKey,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  new CfnLoggingConfiguration(scope, 'EdgeWebAclLogging', {
    resourceArn: acl.attrArn,
    logDestinationConfigs: [
      Stack.of(scope).formatArn({
        service: 'logs',
        resource: 'log-group',
        resourceName: logGroupName,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      }),
    ],
    redactedFields: wafRedactedHeaders.map((name) => ({ singleHeader: { Name: name } })),
  }).node.addDependency(logGroup);
  return acl;
}
