import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerService, startSchedulerInMemory } from '../support/scheduler-harness.ts';

describe('ACL roles', () => {
  let h: SchedulerService;
  let root: string;
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: root, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startSchedulerInMemory();
    root = await h.bootstrap();
    for (const name of ['read-jobs', 'read-nodes']) {
      await mgmt('POST', `/v1/acl/policy/${name}`, {
        Rules: name === 'read-jobs' ? 'namespace "default" { policy = "read" }' : 'node { policy = "read" }',
      });
    }
  });
  afterAll(() => h.close());

  it('creates a role, removing duplicate policy links, and reads it by ID and by name', async () => {
    const created = await mgmt('POST', '/v1/acl/role', {
      Name: 'ops_team-1',
      Description: 'operators',
      Policies: [{ Name: 'read-jobs' }, { Name: 'read-nodes' }, { Name: 'read-jobs' }],
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      Name: 'ops_team-1',
      Description: 'operators',
      Policies: [{ Name: 'read-jobs' }, { Name: 'read-nodes' }],
    });
    expect(created.body.ID).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.body.CreateIndex).toBe(created.body.ModifyIndex);
    expect((await mgmt('GET', `/v1/acl/role/${created.body.ID}`)).body).toEqual(created.body);
    expect((await mgmt('GET', '/v1/acl/role/name/ops_team-1')).body).toEqual(created.body);
    expect((await mgmt('GET', '/v1/acl/role/name/nobody')).status).toBe(404);
    expect((await mgmt('GET', '/v1/acl/role/00000000-0000-0000-0000-000000000000')).text).toBe('ACL role not found');
  });

  it('enforces every rule and limit of a role', async () => {
    const refuse = async (body: unknown, pattern: RegExp) => {
      const out = await mgmt('POST', '/v1/acl/role', body);
      expect(out.status).toBe(400);
      expect(out.text).toMatch(pattern);
    };
    await refuse({ Name: '', Policies: [{ Name: 'read-jobs' }] }, /invalid name/);
    await refuse({ Name: 'has space', Policies: [{ Name: 'read-jobs' }] }, /invalid name/);
    await refuse({ Name: 'dot.name', Policies: [{ Name: 'read-jobs' }] }, /invalid name/);
    await refuse({ Name: 'x'.repeat(129), Policies: [{ Name: 'read-jobs' }] }, /invalid name/);
    expect(
      (await mgmt('POST', '/v1/acl/role', { Name: 'y'.repeat(128), Policies: [{ Name: 'read-jobs' }] })).status,
    ).toBe(200);
    await refuse(
      { Name: 'long-desc', Description: 'd'.repeat(257), Policies: [{ Name: 'read-jobs' }] },
      /description longer than 256/,
    );
    expect(
      (
        await mgmt('POST', '/v1/acl/role', {
          Name: 'desc-256',
          Description: 'd'.repeat(256),
          Policies: [{ Name: 'read-jobs' }],
        })
      ).status,
    ).toBe(200);
    await refuse({ Name: 'no-policies', Policies: [] }, /at least one policy/);
    await refuse({ Name: 'no-policies' }, /at least one policy/);
    await refuse({ Name: 'ghost', Policies: [{ Name: 'missing-policy' }] }, /cannot find policy missing-policy/);
    await refuse({ Name: 'ops_team-1', Policies: [{ Name: 'read-jobs' }] }, /already exists/);
    await refuse(
      { ID: '3f1e6c52-0000-0000-0000-000000000000', Name: 'with-id', Policies: [{ Name: 'read-jobs' }] },
      /must not be set/,
    );
  });

  it('updates a role only when the body ID equals the path ID; renames free the old name; unchanged updates keep the index', async () => {
    const role = (await mgmt('POST', '/v1/acl/role', { Name: 'to-rename', Policies: [{ Name: 'read-jobs' }] })).body;
    const path = `/v1/acl/role/${role.ID}`;
    expect((await mgmt('POST', path, { Name: 'to-rename', Policies: [{ Name: 'read-jobs' }] })).text).toMatch(
      /ID is required/,
    );
    expect(
      (
        await mgmt('POST', path, {
          ID: '11111111-2222-3333-4444-555555555555',
          Name: 'to-rename',
          Policies: [{ Name: 'read-jobs' }],
        })
      ).text,
    ).toBe('ACL role ID in URL must match ID in body');
    expect(
      (
        await mgmt('POST', '/v1/acl/role/11111111-2222-3333-4444-555555555555', {
          ID: '11111111-2222-3333-4444-555555555555',
          Name: 'n',
          Policies: [{ Name: 'read-jobs' }],
        })
      ).status,
    ).toBe(404);
    const same = await mgmt('POST', path, { ID: role.ID, Name: 'to-rename', Policies: [{ Name: 'read-jobs' }] });
    expect(same.body.ModifyIndex).toBe(role.ModifyIndex);
    const renamed = await mgmt('POST', path, {
      ID: role.ID,
      Name: 'renamed',
      Description: 'new',
      Policies: [{ Name: 'read-nodes' }],
    });
    expect(renamed.body).toMatchObject({
      ID: role.ID,
      Name: 'renamed',
      Description: 'new',
      Policies: [{ Name: 'read-nodes' }],
      CreateIndex: role.CreateIndex,
    });
    expect(renamed.body.ModifyIndex).toBeGreaterThan(role.ModifyIndex);
    expect((await mgmt('GET', '/v1/acl/role/name/to-rename')).status).toBe(404);
    expect((await mgmt('POST', '/v1/acl/role', { Name: 'to-rename', Policies: [{ Name: 'read-jobs' }] })).status).toBe(
      200,
    );
    expect(
      (await mgmt('POST', path, { ID: role.ID, Name: 'ops_team-1', Policies: [{ Name: 'read-jobs' }] })).text,
    ).toMatch(/already exists/);
  });

  it('lists by even-length hex prefix, and a non-management token lists and reads only its own roles', async () => {
    const all = (await mgmt('GET', '/v1/acl/roles')).body as Array<{ ID: string; Name: string }>;
    expect(all.length).toBeGreaterThanOrEqual(4);
    const target = all.find((role) => role.Name === 'ops_team-1') as { ID: string };
    const prefix = target.ID.slice(0, 2);
    const filtered = (await mgmt('GET', `/v1/acl/roles?prefix=${prefix}`)).body as Array<{ ID: string }>;
    expect(filtered.every((role) => role.ID.startsWith(prefix))).toBe(true);
    expect(filtered.map((role) => role.ID)).toContain(target.ID);
    for (const bad of ['a', 'abc', 'zz', 'AB', `${prefix}-`]) {
      expect((await mgmt('GET', `/v1/acl/roles?prefix=${bad}`)).status).toBe(400);
    }

    const token = (await mgmt('POST', '/v1/acl/token', { Type: 'client', Roles: [{ Name: 'ops_team-1' }] })).body;
    expect(token.Roles).toEqual([{ ID: target.ID, Name: 'ops_team-1' }]);
    const mine = await h.call('GET', '/v1/acl/roles', { token: token.SecretID });
    expect(mine.body.map((role: { ID: string }) => role.ID)).toEqual([target.ID]);
    expect((await h.call('GET', `/v1/acl/role/${target.ID}`, { token: token.SecretID })).status).toBe(200);
    expect((await h.call('GET', '/v1/acl/role/name/ops_team-1', { token: token.SecretID })).status).toBe(200);
    const other = all.find((role) => role.Name === 'renamed') as { ID: string };
    expect((await h.call('GET', `/v1/acl/role/${other.ID}`, { token: token.SecretID })).text).toBe('Permission denied');
    expect((await h.call('GET', '/v1/acl/role/name/renamed', { token: token.SecretID })).status).toBe(403);
    // The role's policies reach the token: it can read a policy it holds only through the role.
    expect((await h.call('GET', '/v1/acl/policy/read-nodes', { token: token.SecretID })).status).toBe(200);
    const noRoles = (await mgmt('POST', '/v1/acl/token', { Type: 'client', Policies: ['read-jobs'] })).body;
    expect((await h.call('GET', '/v1/acl/roles', { token: noRoles.SecretID })).body).toEqual([]);
    expect((await h.call('GET', `/v1/acl/role/${target.ID}`, { token: noRoles.SecretID })).status).toBe(403);
    // Writes need management.
    expect(
      (
        await h.call('POST', '/v1/acl/role', {
          token: token.SecretID,
          body: { Name: 'x', Policies: [{ Name: 'read-jobs' }] },
        })
      ).status,
    ).toBe(403);
    expect((await h.call('DELETE', `/v1/acl/role/${target.ID}`, { token: token.SecretID })).status).toBe(403);
  });

  it('deletes a role with an empty body; a second delete is 404', async () => {
    const role = (await mgmt('POST', '/v1/acl/role', { Name: 'short-lived', Policies: [{ Name: 'read-jobs' }] })).body;
    const deleted = await mgmt('DELETE', `/v1/acl/role/${role.ID}`);
    expect(deleted.status).toBe(200);
    expect(deleted.text).toBe('');
    expect(Number(deleted.headers.get('X-Scheduler-Index'))).toBeGreaterThan(role.ModifyIndex);
    expect((await mgmt('DELETE', `/v1/acl/role/${role.ID}`)).status).toBe(404);
    expect((await mgmt('GET', '/v1/acl/role/name/short-lived')).status).toBe(404);
  });
});
