import { beforeAll, describe, expect, it } from 'vitest';
import { type Synthesized, synthesize } from './synthesize.ts';
import { resourcesOf, routeTargets, single } from './template-queries.ts';

describe('SST app, synthesised offline (stage "prod")', () => {
  let s: Synthesized;
  beforeAll(async () => {
    s = await synthesize('prod');
  }, 120_000);

  it('protects the table and the key from deletion outside dev stages', () => {
    const table = single(s.storage, 'AWS::DynamoDB::Table');
    expect(table.Properties.DeletionProtectionEnabled).toBe(true);
    expect(table.DeletionPolicy).toBe('Retain');
    const key = single(s.storage, 'AWS::KMS::Key');
    expect(key.DeletionPolicy).toBe('Retain');
  });

  it('routes a second mount of the same type (gcp-prod) to the same cloud function', () => {
    const targets = routeTargets(s.secrets);
    expect(targets['ANY /v1/gcp-prod/{proxy+}']).toBe('functions/secrets/cloud.handler');
    expect(targets['ANY /v1/gcp-prod']).toBe('functions/secrets/cloud.handler');
    expect(targets['ANY /v1/cloud/{proxy+}']).toBe('functions/secrets/cloud.handler');
    const cloudFunctions = resourcesOf(s.secrets, 'AWS::Lambda::Function').filter(([, fn]) => fn.Properties.Handler === 'functions/secrets/cloud.handler');
    expect(cloudFunctions).toHaveLength(1);
  });
});
