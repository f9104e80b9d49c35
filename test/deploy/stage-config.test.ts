import { describe, expect, it } from 'vitest';
import { checkEdge } from '../../stacks/stage-checks.ts';
import { corsOf, stageConfig } from '../../stacks/stage-config.ts';

describe('stage config', () => {
  it('treats dev and test stages as disposable and others as protected', () => {
    expect(stageConfig('dev').isDev).toBe(true);
    expect(stageConfig('dev-alice').isDev).toBe(true);
    expect(stageConfig('prod').isDev).toBe(false);
  });

  it('refuses mounts that overlap, are reserved, or have no family', () => {
    expect(() =>
      stageConfigWith([
        { path: 'a', type: 'kv' },
        { path: 'a/b', type: 'kv' },
      ]),
    ).toThrow(/overlap/);
    expect(() => stageConfigWith([{ path: 'sys', type: 'kv' }])).toThrow(/reserved/);
    expect(() => stageConfigWith([{ path: 'x', type: 'nope' }])).toThrow(/unknown mount type/);
    expect(() => stageConfigWith([{ path: 'jwt', type: 'jwt' }])).toThrow(/auth\//);
  });
});

describe('CORS origins', () => {
  it('refuses * and anything but scheme://host[:port]', () => {
    for (const origin of ['*', 'https://*.example.com', 'example.com', 'https://a.example.com/path']) {
      expect(() => corsOf(stageConfig('test', 'us-east-1', { corsOrigins: [origin] }))).toThrow(/CORS origin/);
    }
    expect(corsOf(stageConfig('test', 'us-east-1', { corsOrigins: ['https://a.example.com:8443'] }))).toMatchObject({
      allowOrigins: ['https://a.example.com:8443'],
    });
    expect(corsOf(stageConfig('test'))).toBe(false);
  });
});

function stageConfigWith(mounts: Array<{ path: string; type: string }>) {
  return stageConfig('test', 'us-east-1', { mounts });
}

/** Issue 25 (CFR4, CFR2): the edge a stage outside dev must have, checked before anything is synthesised. */
describe('the edge of a stage (checkEdge)', () => {
  const certificate = 'arn:aws:acm:us-east-1:123456789012:certificate/00000000-0000-0000-0000-000000000000';
  const domains = {
    secrets: { domainName: 'secrets.example.com', certificateArn: certificate },
    scheduler: { domainName: 'scheduler.example.com', certificateArn: certificate },
  };
  const acl = 'arn:aws:wafv2:us-east-1:123456789012:global/webacl/keyhaven-x-edge/0a1b2c3d-4e5f-6789-abcd-ef0123456789';

  it('refuses a stage outside dev without its own names and certificates (the default CloudFront certificate accepts TLS 1.0)', () => {
    expect(() => checkEdge('staging', { isDev: false, region: 'us-east-1' })).toThrow(
      /stage config: staging is not a dev stage, so its secrets distribution needs its own name and certificate .*accepts TLS 1\.0.*: set customDomains\.secrets/,
    );
    expect(() =>
      checkEdge('staging', { isDev: false, region: 'us-east-1', customDomains: { secrets: domains.secrets } }),
    ).toThrow(/set customDomains\.scheduler/);
    expect(() => checkEdge('staging', { isDev: false, region: 'us-east-1', customDomains: domains })).not.toThrow();
    expect(() => checkEdge('dev', { isDev: true, region: 'eu-west-1' })).not.toThrow();
  });

  it('refuses a certificate outside us-east-1, a malformed name, or one name for both', () => {
    const elsewhere = {
      ...domains,
      scheduler: { ...domains.scheduler, certificateArn: certificate.replace('us-east-1', 'eu-west-1') },
    };
    expect(() => checkEdge('staging', { isDev: false, region: 'us-east-1', customDomains: elsewhere })).toThrow(
      /customDomains\.scheduler\.certificateArn .* us-east-1/,
    );
    const malformed = { ...domains, secrets: { ...domains.secrets, domainName: 'https://secrets.example.com' } };
    expect(() => checkEdge('dev', { isDev: true, region: 'us-east-1', customDomains: malformed })).toThrow(
      /customDomains\.secrets\.domainName .* is not a host name/,
    );
    const same = { ...domains, scheduler: { ...domains.secrets } };
    expect(() => checkEdge('staging', { isDev: false, region: 'us-east-1', customDomains: same })).toThrow(
      /must be different names/,
    );
  });

  it('requires a web ACL in us-east-1 to name outside us-east-1, and refuses one that is not a CloudFront web ACL', () => {
    expect(() => checkEdge('staging', { isDev: false, region: 'eu-west-1', customDomains: domains })).toThrow(
      /staging is not a dev stage and is deployed in eu-west-1, where no CloudFront web ACL can be made: set edgeWebAclArn/,
    );
    expect(() =>
      checkEdge('staging', { isDev: false, region: 'eu-west-1', customDomains: domains, edgeWebAclArn: acl }),
    ).not.toThrow();
    const regional = acl.replace('us-east-1', 'eu-west-1').replace('global', 'regional');
    expect(() =>
      checkEdge('staging', { isDev: false, region: 'eu-west-1', customDomains: domains, edgeWebAclArn: regional }),
    ).toThrow(/is not a CloudFront web ACL ARN/);
  });
});

describe("a stage's override is merged into the defaults block by block", () => {
  it('prod changes only what it names in a block: the defaults of a stage outside dev keep the rest', () => {
    const prod = stageConfig('prod', 'us-east-1');
    const defaults = stageConfig('staging', 'us-east-1');
    // What prod names: a copy of the audit trail and of each backup elsewhere, and more event-stream concurrency.
    expect(prod.audit.replication?.bucketArn).toBe('arn:aws:s3:::keyhaven-prod-audit-copy');
    expect(prod.backup?.copyToVaultArn).toBe('arn:aws:backup:us-west-2:210987654321:backup-vault:keyhaven-prod-copy');
    expect(prod.reservedConcurrency.eventStream).toBe(100);
    // What it leaves alone is the defaults'.
    const { replication: _replication, ...audit } = prod.audit;
    expect(audit).toEqual(defaults.audit);
    expect({ ...prod.backup, copyToVaultArn: undefined }).toEqual({ ...defaults.backup, copyToVaultArn: undefined });
    expect({ ...prod.reservedConcurrency, eventStream: 0 }).toEqual({
      ...defaults.reservedConcurrency,
      eventStream: 0,
    });
    expect(prod.throttle).toEqual(defaults.throttle);
    // A list is replaced, not merged: prod's mounts are the defaults and one more.
    expect(prod.mounts).toEqual([...defaults.mounts, { path: 'gcp-prod', type: 'cloud' }]);
  });

  it('takes a whole field from `extra` as given', () => {
    const backup = { retentionDays: 7, lockChangeableForDays: 3 };
    expect(stageConfig('prod', 'us-east-1', { backup }).backup).toEqual(backup);
  });
});
