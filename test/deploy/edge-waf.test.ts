import { beforeAll, describe, expect, it } from 'vitest';
import {
  countedCommonRules,
  edgeWebAclLogGroupName,
  loginRequestsPerIpPer5Minutes,
  wafLoginPaths,
  wafRedactedHeaders,
  wafSecretsLoginPattern,
} from '../../stacks/waf.ts';
import { type Synthesized, synthesize } from './synthesize.ts';
import { resourcesOf, single } from './template-queries.ts';

/**
 * Issue 25 (CFR2): the stage's edge holds a flood of logins from one address, and known-bad traffic, on both
 * distributions. Synthesis of `prod` in us-east-1, where the Edge stack makes the web ACL.
 */
let s: Synthesized;
beforeAll(async () => {
  s = await synthesize('prod');
}, 180_000);

// biome-ignore lint/suspicious/noExplicitAny: CloudFormation JSON is untyped
type Rule = { Name: string; Action?: unknown; Statement: Record<string, any> };
const rules = () => single(s.edge, 'AWS::WAFv2::WebACL').Properties.Rules as Rule[];

describe('the edge web ACL (synthesis of "prod" in us-east-1)', () => {
  it('blocks an IP past the login rate, then applies AWS IP reputation, known bad inputs and the common rule set', () => {
    expect(single(s.edge, 'AWS::WAFv2::WebACL').Properties).toMatchObject({
      Scope: 'CLOUDFRONT',
      DefaultAction: { Allow: {} },
      Name: 'keyhaven-prod-edge',
    });
    expect(rules().map((rule) => rule.Name)).toEqual([
      'LoginRatePerIp',
      'AWSManagedRulesAmazonIpReputationList',
      'AWSManagedRulesKnownBadInputsRuleSet',
      'AWSManagedRulesCommonRuleSet',
    ]);
    expect(rules()[0]?.Action).toEqual({ Block: {} });
    expect(rules()[0]?.Statement.RateBasedStatement).toMatchObject({
      Limit: loginRequestsPerIpPer5Minutes,
      AggregateKeyType: 'IP',
    });
    // A secret's value or a policy is the caller's data: the body rules only count.
    expect(rules()[3]?.Statement.ManagedRuleGroupStatement.RuleActionOverrides).toEqual(
      countedCommonRules.map((Name) => ({ Name, ActionToUse: { Count: {} } })),
    );
  });

  it("counts both services' login routes, URL-decoded as the services route them", () => {
    const statements = rules()[0]?.Statement.RateBasedStatement.ScopeDownStatement.OrStatement.Statements;
    const decoded = [{ Priority: 0, Type: 'URL_DECODE' }];
    expect(statements).toEqual([
      ...wafLoginPaths.map((SearchString) => ({
        ByteMatchStatement: {
          FieldToMatch: { UriPath: {} },
          PositionalConstraint: 'STARTS_WITH',
          SearchString,
          TextTransformations: decoded,
        },
      })),
      {
        RegexMatchStatement: {
          FieldToMatch: { UriPath: {} },
          RegexString: wafSecretsLoginPattern,
          TextTransformations: decoded,
        },
      },
    ]);
    // The pattern, on the secrets service's paths (WAF's regex syntax agrees with JavaScript's on this one).
    const pattern = new RegExp(wafSecretsLoginPattern);
    for (const path of [
      '/v1/auth/jwt/login',
      '/v1/auth/team/sso/login',
      '/v1/auth/oidc/oidc/auth_url',
      '/v1/auth/jwt/oidc/callback',
    ])
      expect(path).toMatch(pattern);
    for (const path of [
      '/v1/auth/token/lookup-self',
      '/v1/secret/login',
      '/v1/auth/jwt/role/login-role/x',
      '/v1/sys/health',
    ])
      expect(path).not.toMatch(pattern);
  });

  it('is the web ACL of both distributions, and its output names it for other regions', () => {
    const [aclId] = resourcesOf(s.edge, 'AWS::WAFv2::WebACL')[0] ?? [];
    expect(s.edge.toJSON().Outputs.EdgeWebAclArn.Value).toEqual({ 'Fn::GetAtt': [aclId, 'Arn'] });
    for (const template of [s.secrets, s.scheduler]) {
      const webAcl = single(template, 'AWS::CloudFront::Distribution').Properties.DistributionConfig.WebACLId;
      expect(JSON.stringify(webAcl)).toMatch(
        /"Fn::ImportValue":"prod-keyhaven-Edge:ExportsOutputFnGetAttEdgeWebAclArn[0-9A-F]+"/,
      );
    }
  });

  it('logs every request without the headers that carry tokens, into a log group under the stage logs key', () => {
    const [aclId] = resourcesOf(s.edge, 'AWS::WAFv2::WebACL')[0] ?? [];
    const logging = single(s.edge, 'AWS::WAFv2::LoggingConfiguration').Properties;
    expect(logging.ResourceArn).toEqual({ 'Fn::GetAtt': [aclId, 'Arn'] });
    expect(JSON.stringify(logging.LogDestinationConfigs)).toContain(`log-group:${edgeWebAclLogGroupName('prod')}`);
    expect(logging.RedactedFields).toEqual(wafRedactedHeaders.map((name) => ({ SingleHeader: { Name: name } })));
    const logGroup = single(s.edge, 'AWS::Logs::LogGroup');
    expect(logGroup.Properties.LogGroupName).toBe(edgeWebAclLogGroupName('prod'));
    expect(JSON.stringify(logGroup.Properties.KmsKeyId)).toMatch(
      /"Fn::ImportValue":"prod-keyhaven-Storage:ExportsOutputFnGetAttLogsKey[0-9A-F]+Arn/,
    );
  });
});
