import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobPk, NAMESPACE_PK } from '../../packages/core/src/scheduler/keys.ts';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('namespaces', () => {
  let h: SchedulerService;
  let root: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });
  const index = () => h.scheduler.state.currentIndex();
  const stored = (name: string) => h.core.store.get(NAMESPACE_PK, name);
  const names = (body: Array<{ Name: string }>) => body.map((namespace) => namespace.Name);

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
  });
  afterAll(() => h.close());

  it('has the default namespace as Nomad creates it', async () => {
    const list = await mgmt('GET', '/v1/namespaces');
    expect(list.status).toBe(200);
    expect(names(list.body)).toEqual(['default']);
    expect((await mgmt('GET', '/v1/namespace/default')).body).toMatchObject({
      Name: 'default',
      Description: 'Default shared namespace',
      Quota: '',
      Capabilities: null,
      NodePoolConfiguration: null,
      VaultConfiguration: null,
      ConsulConfiguration: null,
      Meta: null,
      CreateIndex: 1,
      ModifyIndex: 1,
    });
    const missing = await mgmt('GET', '/v1/namespace/nope');
    expect(missing.status).toBe(404);
    expect(missing.text).toBe('Namespace not found');
  });

  it('creates and updates namespaces at one index each, with no event (Nomad emits none)', async () => {
    const before = await index();
    const created = await mgmt('PUT', '/v1/namespace', {
      Name: 'prod-web',
      Description: 'production web',
      Meta: { team: 'web' },
      Capabilities: { EnabledTaskDrivers: ['raw_exec'], DisabledNetworkModes: ['host'] },
      NodePoolConfiguration: { Allowed: ['prod-*'] },
    });
    expect(created.status).toBe(200);
    expect(Number(created.headers.get('X-Nomad-Index'))).toBe(before + 1);
    expect((await mgmt('GET', '/v1/namespace/prod-web')).body).toMatchObject({
      Name: 'prod-web',
      Description: 'production web',
      Meta: { team: 'web' },
      Capabilities: {
        EnabledTaskDrivers: ['raw_exec'],
        DisabledTaskDrivers: null,
        EnabledNetworkModes: null,
        DisabledNetworkModes: ['host'],
      },
      NodePoolConfiguration: { Default: 'default', Allowed: ['prod-*'], Denied: null },
      CreateIndex: before + 1,
      ModifyIndex: before + 1,
    });
    expect(await stored('prod-web')).toMatchObject({ Name: 'prod-web' });
    expect(await h.scheduler.state.eventsAfter(before)).toEqual([]);

    const same = await mgmt('POST', '/v1/namespace/prod-web', {
      Name: 'prod-web',
      Description: 'production web',
      Meta: { team: 'web' },
      Capabilities: { EnabledTaskDrivers: ['raw_exec'], DisabledNetworkModes: ['host'] },
      NodePoolConfiguration: { Allowed: ['prod-*'] },
    });
    expect(same.headers.get('X-Nomad-Index')).toBe(String(before + 1));
    const changed = await mgmt('POST', '/v1/namespace/prod-web', { Name: 'prod-web', Description: 'web' });
    expect((await mgmt('GET', '/v1/namespace/prod-web')).body).toMatchObject({
      Description: 'web',
      Capabilities: null,
      CreateIndex: before + 1,
      ModifyIndex: Number(changed.headers.get('X-Nomad-Index')),
    });

    const defaultChanged = await mgmt('PUT', '/v1/namespace/default', { Name: 'default', Description: 'ours' });
    expect(defaultChanged.status).toBe(200);
    expect((await mgmt('GET', '/v1/namespace/default')).body).toMatchObject({ Description: 'ours', CreateIndex: 1 });
    expect(names((await mgmt('GET', '/v1/namespaces')).body)).toEqual(['default', 'prod-web']);
  });

  it('refuses bad namespaces with a 400 naming the problem, and writes nothing', async () => {
    const before = await index();
    const refuse = async (path: string, body: unknown, pattern: RegExp) => {
      const out = await mgmt('PUT', path, body);
      expect(out.status).toBe(400);
      expect(out.text).toMatch(pattern);
    };
    await refuse(
      '/v1/namespace',
      { Name: 'under_score' },
      /Invalid namespace "under_score": invalid name "under_score"/,
    );
    await refuse('/v1/namespace', { Name: 'x'.repeat(129) }, /invalid name/);
    await refuse('/v1/namespace', {}, /invalid name ""/);
    await refuse('/v1/namespace', { Name: 'long', Description: 'd'.repeat(257) }, /description longer than 256/);
    await refuse('/v1/namespace', { Name: 'meta', Meta: { k: 'v'.repeat(70_000) } }, /Meta is 70001 bytes/);
    await refuse(
      '/v1/namespace',
      { Name: 'quota', Quota: 'gold' },
      /namespace "quota" using non-existent quota "gold"/,
    );
    await refuse(
      '/v1/namespace',
      { Name: 'pools', NodePoolConfiguration: { Allowed: ['a'], Denied: ['b'] } },
      /only one of Allowed and Denied may be set/,
    );
    await refuse(
      '/v1/namespace',
      { Name: 'pools', NodePoolConfiguration: { Default: 'bad pool' } },
      /invalid default node pool "bad pool"/,
    );
    await refuse('/v1/namespace', { Name: 'vault', VaultConfiguration: { Default: 'x' } }, /Multi-Cluster Vault/);
    await refuse('/v1/namespace/other', { Name: 'another' }, /^Namespace name does not match request path$/);
    const deleteDefault = await mgmt('DELETE', '/v1/namespace/default');
    expect(deleteDefault.status).toBe(400);
    expect(deleteDefault.text).toBe('can not delete default namespace');
    expect(await index()).toBe(before);
    expect(await stored('under_score')).toBeUndefined();
  });

  it('deletes a namespace without live jobs; 404 for none; 409 while a job is not dead', async () => {
    await mgmt('PUT', '/v1/namespace', { Name: 'scratch' });
    await h.core.store.put({
      pk: jobPk('scratch'),
      sk: 'cron',
      ID: 'cron',
      Namespace: 'scratch',
      NodePool: 'default',
      Status: 'pending',
    });
    const busy = await mgmt('DELETE', '/v1/namespace/scratch');
    expect(busy.status).toBe(409);
    expect(busy.text).toBe(
      'namespace "scratch" contains at least one non-terminal job "cron". All jobs must be terminal in namespace before it can be deleted',
    );
    expect(await stored('scratch')).toBeDefined();
    await h.core.store.put({
      pk: jobPk('scratch'),
      sk: 'cron',
      ID: 'cron',
      Namespace: 'scratch',
      NodePool: 'default',
      Status: 'dead',
    });
    const deleted = await mgmt('DELETE', '/v1/namespace/scratch');
    expect(deleted.status).toBe(200);
    expect(await stored('scratch')).toBeUndefined();
    const missing = await mgmt('DELETE', '/v1/namespace/scratch');
    expect(missing.status).toBe(404);
    expect(missing.text).toBe('namespace not found');
  });

  it('answers a blocking list when a namespace changes, and lists by prefix', async () => {
    const now = Number((await mgmt('GET', '/v1/namespaces')).headers.get('X-Nomad-Index'));
    const waiting = mgmt('GET', `/v1/namespaces?index=${now}&wait=5s`);
    await mgmt('PUT', '/v1/namespace', { Name: 'prod-api' });
    const answer = await waiting;
    expect(Number(answer.headers.get('X-Nomad-Index'))).toBeGreaterThan(now);
    expect(names(answer.body)).toContain('prod-api');
    expect(names((await mgmt('GET', '/v1/namespaces?prefix=prod-')).body)).toEqual(['prod-api', 'prod-web']);
  });
});
