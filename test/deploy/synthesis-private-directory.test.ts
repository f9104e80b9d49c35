import { beforeAll, describe, expect, it } from 'vitest';
import { type Synthesized, synthesize } from './synthesize.ts';
import { engineJobEntry, entryOf, resourcesOf, routeTargets, secretsEntry } from './template-queries.ts';

describe('SST app, synthesised offline (stage "example-private": kv and a directory in a private network)', () => {
  let s: Synthesized;
  beforeAll(async () => {
    s = await synthesize('example-private');
  }, 120_000);

  it('creates functions only for the declared families, and jobs only for the declared engines', () => {
    const secrets = resourcesOf(s.secrets, 'AWS::Lambda::Function').map(([, fn]) => entryOf(fn));
    expect(secrets.filter((handler) => String(handler).startsWith('functions/')).sort()).toEqual(
      [secretsEntry('kv'), secretsEntry('ldap'), secretsEntry('system')].sort(),
    );
    expect(Object.values(routeTargets(s.secrets))).not.toContain(secretsEntry('cloud'));
    const jobs = resourcesOf(s.jobs, 'AWS::Lambda::Function').map(([, fn]) => entryOf(fn));
    expect(jobs.filter((handler) => handler.startsWith('functions/')).sort()).toEqual(
      [
        engineJobEntry('ldap'),
        'functions/jobs/sweep.handler',
        'functions/jobs/table-stream.handler',
        'functions/jobs/evaluation-trigger.handler',
      ].sort(),
    );
  });

  it('puts the directory endpoints and the directory job (rotation, revocation) in the directory subnets, nothing else', () => {
    const all = [
      ...resourcesOf(s.secrets, 'AWS::Lambda::Function'),
      ...resourcesOf(s.jobs, 'AWS::Lambda::Function'),
    ].filter(([, fn]) => String(fn.Properties.Handler).startsWith('functions/'));
    const inVpc = all.filter(([, fn]) => fn.Properties.VpcConfig).map(([, fn]) => entryOf(fn));
    expect(inVpc.sort()).toEqual([engineJobEntry('ldap'), secretsEntry('ldap')]);
    for (const [, fn] of all.filter(([, fn]) => fn.Properties.VpcConfig)) {
      expect(fn.Properties.VpcConfig).toEqual({
        SubnetIds: ['subnet-0examplea', 'subnet-0exampleb'],
        SecurityGroupIds: ['sg-0example'],
      });
    }
  });
});
