import { afterEach, describe, expect, it } from 'vitest';
import { createTestCa } from '../support/test-pki.ts';
import { type ConsulEmulator, type ConsulEmulatorOptions, startConsulEmulator } from './consul.ts';

const started: ConsulEmulator[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((emulator) => emulator.close()));
});

async function consul(options: ConsulEmulatorOptions = {}): Promise<ConsulEmulator> {
  const emulator = await startConsulEmulator(options);
  started.push(emulator);
  return emulator;
}

/** A server with its ACL system bootstrapped; returns the management token's secret. */
async function bootstrapped(options: ConsulEmulatorOptions = {}): Promise<{ emulator: ConsulEmulator; root: string }> {
  const emulator = await consul(options);
  const reply = await emulator.request('PUT', '/v1/acl/bootstrap');
  expect(reply.status).toBe(200);
  return {
    emulator,
    root: (reply.json as { SecretID?: string; ID: string }).SecretID ?? (reply.json as { ID: string }).ID,
  };
}

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('Consul emulator', () => {
  describe('bootstrap', () => {
    it('makes one global-management token, then refuses with 403', async () => {
      const emulator = await consul();
      const first = await emulator.request('PUT', '/v1/acl/bootstrap');
      expect(first.status).toBe(200);
      const token = first.json as Record<string, unknown>;
      expect(token).toMatchObject({
        AccessorID: expect.stringMatching(uuid),
        SecretID: expect.stringMatching(uuid),
        Description: 'Bootstrap Token (Global Management)',
        Policies: [{ ID: '00000000-0000-0000-0000-000000000001', Name: 'global-management' }],
        Local: false,
        CreateIndex: expect.any(Number),
      });
      expect(token.ID).toBe(token.SecretID);

      const again = await emulator.request('PUT', '/v1/acl/bootstrap');
      expect(again.status).toBe(403);
      expect(again.body).toMatch(/^Permission denied: ACL bootstrap no longer allowed \(reset index: \d+\)$/);
    });

    it('answers only {"ID"} below 1.4, and is refused when an initial management token is configured', async () => {
      const old = await consul({ version: '1.3.1' });
      const reply = await old.request('PUT', '/v1/acl/bootstrap');
      expect(Object.keys(reply.json as object)).toEqual(['ID']);

      const configured = await consul({ initialManagementToken: 'c0ffee00-0000-4000-8000-000000000001' });
      expect((await configured.request('PUT', '/v1/acl/bootstrap')).status).toBe(403);
      const self = await configured.request('GET', '/v1/acl/token/self', {
        token: 'c0ffee00-0000-4000-8000-000000000001',
      });
      expect(self.json).toMatchObject({ Policies: [{ Name: 'global-management' }] });
    });
  });

  describe('agent/self', () => {
    it('reports Config.Version (with +ent on Enterprise) to a token with agent:read', async () => {
      const { emulator, root } = await bootstrapped({ version: '1.12.3' });
      const self = await emulator.request('GET', '/v1/agent/self', { token: root });
      expect(self.status).toBe(200);
      expect(self.json).toMatchObject({ Config: { Version: '1.12.3+ent', Datacenter: 'dc1', Server: true } });

      const oss = await bootstrapped({ version: '1.9.0', enterprise: false });
      expect((await oss.emulator.request('GET', '/v1/agent/self', { token: oss.root })).json).toMatchObject({
        Config: { Version: '1.9.0' },
      });
    });

    it('refuses the anonymous token and unknown tokens', async () => {
      const emulator = await consul();
      const anonymous = await emulator.request('GET', '/v1/agent/self');
      expect(anonymous.status).toBe(403);
      expect(anonymous.body).toContain("anonymous token lacks permission 'agent:read'");
      const unknown = await emulator.request('GET', '/v1/agent/self', {
        token: '6a1253d2-1785-24fd-91c2-f8e78c745511',
      });
      expect(unknown).toMatchObject({ status: 403, body: 'ACL not found' });
    });
  });

  describe('tokens', () => {
    it('create links policies by name or ID; read shows names; delete answers true', async () => {
      const { emulator, root } = await bootstrapped();
      const policy = (
        await emulator.request('PUT', '/v1/acl/policy', {
          token: root,
          body: { Name: 'node-read', Rules: 'node_prefix "" { policy = "read" }' },
        })
      ).json as { ID: string };
      const other = (await emulator.request('PUT', '/v1/acl/policy', { token: root, body: { Name: 'svc-read' } }))
        .json as { ID: string };
      const created = await emulator.request('PUT', '/v1/acl/token', {
        token: root,
        body: {
          Description: 'Agent token',
          Policies: [{ ID: policy.ID }, { Name: 'svc-read' }, { Name: 'node-read' }],
          Local: true,
        },
      });
      expect(created.status).toBe(200);
      const token = created.json as { AccessorID: string; SecretID: string };
      expect(created.json).toMatchObject({
        AccessorID: expect.stringMatching(uuid),
        SecretID: expect.stringMatching(uuid),
        Description: 'Agent token',
        Policies: [
          { ID: policy.ID, Name: 'node-read' },
          { ID: other.ID, Name: 'svc-read' },
        ],
        Local: true,
        CreateTime: expect.any(String),
        Hash: expect.any(String),
        Namespace: 'default',
        Partition: 'default',
      });

      const read = await emulator.request('GET', `/v1/acl/token/${token.AccessorID}`, { token: root });
      expect(read.json).toMatchObject({ AccessorID: token.AccessorID, SecretID: token.SecretID, Local: true });

      const deleted = await emulator.request('DELETE', `/v1/acl/token/${token.AccessorID}`, { token: root });
      expect(deleted).toMatchObject({ status: 200, json: true });
      expect((await emulator.request('GET', `/v1/acl/token/${token.AccessorID}`, { token: root })).body).toBe(
        'ACL not found',
      );
      expect((await emulator.request('DELETE', `/v1/acl/token/${token.AccessorID}`, { token: root })).json).toBe(true);
      expect(emulator.token(token.AccessorID)).toBeUndefined();
    });

    it('carries roles, service identities and node identities, validated as Consul validates them', async () => {
      const { emulator, root } = await bootstrapped();
      await emulator.request('PUT', '/v1/acl/policy', { token: root, body: { Name: 'p1' } });
      const role = await emulator.request('PUT', '/v1/acl/role', {
        token: root,
        body: { Name: 'web-role', Policies: [{ Name: 'p1' }] },
      });
      expect(role.json).toMatchObject({ Name: 'web-role', Policies: [{ Name: 'p1' }] });
      const created = await emulator.request('PUT', '/v1/acl/token', {
        token: root,
        body: {
          Roles: [{ Name: 'web-role' }],
          ServiceIdentities: [{ ServiceName: 'web', Datacenters: ['dc1', 'dc2'] }, { ServiceName: 'api' }],
          NodeIdentities: [{ NodeName: 'node-1', Datacenter: 'dc1' }],
        },
      });
      expect(created.json).toMatchObject({
        Roles: [{ Name: 'web-role' }],
        ServiceIdentities: [{ ServiceName: 'web', Datacenters: ['dc1', 'dc2'] }, { ServiceName: 'api' }],
        NodeIdentities: [{ NodeName: 'node-1', Datacenter: 'dc1' }],
      });

      const cases: Array<[unknown, number, string]> = [
        [{ Policies: [{ Name: 'missing' }] }, 500, 'No such ACL policy with name "missing"'],
        [{ Roles: [{ Name: 'missing' }] }, 500, 'No such ACL role with name "missing"'],
        [{ ServiceIdentities: [{ ServiceName: 'Web!' }] }, 500, 'Service identity "Web!" has an invalid name'],
        [
          { ServiceIdentities: [{ ServiceName: 'web', Datacenters: ['dc1'] }], Local: true },
          500,
          'cannot specify a list of datacenters on a local token',
        ],
        [{ NodeIdentities: [{ NodeName: 'node-1' }] }, 500, 'Node identity is missing the datacenter field'],
        [{ Bogus: 1 }, 400, "'' has invalid keys: Bogus"],
        [{ ExpirationTTL: '10s' }, 500, 'ExpirationTime cannot be less than 1m0s in the future'],
      ];
      for (const [body, status, message] of cases) {
        const reply = await emulator.request('PUT', '/v1/acl/token', { token: root, body });
        expect({ body, status: reply.status }).toEqual({ body, status });
        expect(reply.body).toContain(message);
      }
    });

    it('expire at ExpirationTime', async () => {
      const { emulator, root } = await bootstrapped();
      const created = (await emulator.request('PUT', '/v1/acl/token', { token: root, body: { ExpirationTTL: '5m' } }))
        .json as {
        AccessorID: string;
        ExpirationTime: string;
      };
      expect(Date.parse(created.ExpirationTime) - Date.now()).toBeGreaterThan(290_000);
      expect(emulator.token(created.AccessorID)?.ExpirationTime).toBe(created.ExpirationTime);
    });

    it('a client token needs acl:write to create and sees <hidden> secrets with acl:read', async () => {
      const { emulator, root } = await bootstrapped();
      await emulator.request('PUT', '/v1/acl/policy', {
        token: root,
        body: { Name: 'acl-read', Rules: 'acl = "read"' },
      });
      const reader = (
        await emulator.request('PUT', '/v1/acl/token', { token: root, body: { Policies: [{ Name: 'acl-read' }] } })
      ).json as {
        AccessorID: string;
        SecretID: string;
      };
      const denied = await emulator.request('PUT', '/v1/acl/token', { token: reader.SecretID, body: {} });
      expect(denied.status).toBe(403);
      expect(denied.body).toBe(
        `Permission denied: token with AccessorID '${reader.AccessorID}' lacks permission 'acl:write'`,
      );
      const seen = await emulator.request('GET', `/v1/acl/token/${reader.AccessorID}`, { token: reader.SecretID });
      expect(seen.json).toMatchObject({ AccessorID: reader.AccessorID, SecretID: '<hidden>' });
      const self = await emulator.request('GET', '/v1/acl/token/self', { token: reader.SecretID });
      expect(self.json).toMatchObject({ SecretID: reader.SecretID });
      expect(
        (await emulator.request('GET', '/v1/acl/token/self', { headers: { Authorization: `Bearer ${root}` } })).status,
      ).toBe(200);
    });

    it('delete refuses a malformed accessor and the anonymous token', async () => {
      const { emulator, root } = await bootstrapped();
      expect(await emulator.request('DELETE', '/v1/acl/token/not-a-uuid', { token: root })).toMatchObject({
        status: 500,
        body: 'Accessor ID is missing or an invalid UUID',
      });
      expect(
        (await emulator.request('DELETE', '/v1/acl/token/00000000-0000-0000-0000-000000000002', { token: root }))
          .status,
      ).toBe(500);
    });
  });

  describe('policies and roles', () => {
    it('read by ID and by name, update, list without rules, delete', async () => {
      const { emulator, root } = await bootstrapped();
      const created = (
        await emulator.request('PUT', '/v1/acl/policy', {
          token: root,
          body: {
            Name: 'node-read',
            Description: 'nodes',
            Rules: 'node_prefix "" { policy = "read" }',
            Datacenters: ['dc1'],
          },
        })
      ).json as { ID: string };
      expect((await emulator.request('GET', `/v1/acl/policy/${created.ID}`, { token: root })).json).toMatchObject({
        Name: 'node-read',
        Rules: 'node_prefix "" { policy = "read" }',
        Datacenters: ['dc1'],
      });
      expect((await emulator.request('GET', '/v1/acl/policy/name/node-read', { token: root })).json).toMatchObject({
        ID: created.ID,
      });
      const duplicate = await emulator.request('PUT', '/v1/acl/policy', { token: root, body: { Name: 'node-read' } });
      expect(duplicate).toMatchObject({
        status: 500,
        body: 'Invalid Policy: A Policy with Name "node-read" already exists',
      });
      await emulator.request('PUT', `/v1/acl/policy/${created.ID}`, {
        token: root,
        body: { Name: 'node-read', Rules: 'node "" { policy = "write" }' },
      });
      const list = (await emulator.request('GET', '/v1/acl/policies', { token: root })).json as Array<
        Record<string, unknown>
      >;
      expect(list.map((policy) => policy.Name).sort()).toEqual(['global-management', 'node-read']);
      expect(list.every((policy) => !('Rules' in policy))).toBe(true);
      expect((await emulator.request('DELETE', `/v1/acl/policy/${created.ID}`, { token: root })).json).toBe(true);
      expect((await emulator.request('GET', `/v1/acl/policy/${created.ID}`, { token: root })).status).toBe(404);
      expect(
        (await emulator.request('DELETE', '/v1/acl/policy/00000000-0000-0000-0000-000000000001', { token: root }))
          .status,
      ).toBe(500);
    });

    it('roles by name, with invalid names refused', async () => {
      const { emulator, root } = await bootstrapped();
      const role = (
        await emulator.request('PUT', '/v1/acl/role', {
          token: root,
          body: { Name: 'ops', ServiceIdentities: [{ ServiceName: 'db' }] },
        })
      ).json as {
        ID: string;
      };
      expect((await emulator.request('GET', '/v1/acl/role/name/ops', { token: root })).json).toMatchObject({
        ID: role.ID,
        ServiceIdentities: [{ ServiceName: 'db' }],
      });
      expect((await emulator.request('PUT', '/v1/acl/role', { token: root, body: { Name: 'bad name' } })).status).toBe(
        500,
      );
      expect((await emulator.request('DELETE', `/v1/acl/role/${role.ID}`, { token: root })).json).toBe(true);
      expect((await emulator.request('GET', '/v1/acl/roles', { token: root })).json).toEqual([]);
    });
  });

  describe('namespaces and partitions (Enterprise)', () => {
    it('scope tokens; a delete outside the token namespace leaves it alone', async () => {
      const { emulator, root } = await bootstrapped();
      expect(
        (await emulator.request('PUT', '/v1/partition', { token: root, body: { Name: 'part1' } })).json,
      ).toMatchObject({ Name: 'part1' });
      expect(
        (await emulator.request('PUT', '/v1/namespace', { token: root, body: { Name: 'team-a', Partition: 'part1' } }))
          .json,
      ).toMatchObject({
        Name: 'team-a',
        Partition: 'part1',
      });
      await emulator.request('PUT', '/v1/acl/policy?ns=team-a&partition=part1', {
        token: root,
        body: { Name: 'team-read' },
      });
      const inDefault = await emulator.request('PUT', '/v1/acl/token', {
        token: root,
        body: { Policies: [{ Name: 'team-read' }] },
      });
      expect(inDefault).toMatchObject({ status: 500, body: 'No such ACL policy with name "team-read"' });

      const token = (
        await emulator.request('PUT', '/v1/acl/token', {
          token: root,
          body: { Namespace: 'team-a', Partition: 'part1', Policies: [{ Name: 'team-read' }] },
        })
      ).json as { AccessorID: string; Namespace: string; Partition: string };
      expect(token).toMatchObject({ Namespace: 'team-a', Partition: 'part1' });

      expect((await emulator.request('DELETE', `/v1/acl/token/${token.AccessorID}`, { token: root })).json).toBe(true);
      expect(emulator.token(token.AccessorID)).toBeDefined();
      await emulator.request('DELETE', `/v1/acl/token/${token.AccessorID}?ns=team-a&partition=part1`, { token: root });
      expect(emulator.token(token.AccessorID)).toBeUndefined();
    });

    it('refuses a namespace that does not exist, and namespaces on OSS or before 1.7', async () => {
      const { emulator, root } = await bootstrapped();
      const missing = await emulator.request('PUT', '/v1/acl/token', { token: root, body: { Namespace: 'nowhere' } });
      expect(missing.status).toBe(500);
      expect(missing.body).toContain('Namespace "nowhere" does not exist');

      const oss = await bootstrapped({ enterprise: false });
      const refused = await oss.emulator.request('PUT', '/v1/acl/token?ns=team-a', { token: oss.root, body: {} });
      expect(refused.status).toBe(400);
      expect(refused.body).toContain('Namespaces are a Consul Enterprise feature');
      expect((await oss.emulator.request('GET', '/v1/namespaces', { token: oss.root })).status).toBe(404);

      const old = await bootstrapped({ version: '1.6.2' });
      expect(
        (await old.emulator.request('PUT', '/v1/acl/token', { token: old.root, body: { Namespace: 'x' } })).body,
      ).toContain('invalid keys: Namespace');
      const noPartitions = await bootstrapped({ version: '1.10.0' });
      expect(
        (await noPartitions.emulator.request('PUT', '/v1/partition', { token: noPartitions.root, body: { Name: 'p' } }))
          .status,
      ).toBe(404);
    });
  });

  describe('versions', () => {
    it('below 1.4 there is only the legacy API', async () => {
      const { emulator, root } = await bootstrapped({ version: '1.3.1' });
      expect((await emulator.request('PUT', '/v1/acl/token', { token: root, body: {} })).status).toBe(404);
      const created = await emulator.request('PUT', '/v1/acl/create', {
        token: root,
        body: { Name: 'app', Type: 'client', Rules: 'key "" { policy = "read" }' },
      });
      const id = (created.json as { ID: string }).ID;
      expect(id).toMatch(uuid);
      expect((await emulator.request('GET', `/v1/acl/info/${id}`)).json).toEqual([
        {
          CreateIndex: expect.any(Number),
          ModifyIndex: expect.any(Number),
          ID: id,
          Name: 'app',
          Type: 'client',
          Rules: 'key "" { policy = "read" }',
        },
      ]);
      expect(emulator.token(id)).toMatchObject({
        Type: 'client',
        Rules: 'key "" { policy = "read" }',
        Description: 'app',
      });
      const notManagement = await emulator.request('PUT', '/v1/acl/create', { token: id, body: {} });
      expect(notManagement).toMatchObject({ status: 403, body: 'Permission denied' });
      expect((await emulator.request('PUT', `/v1/acl/destroy/${id}`, { token: root })).json).toBe(true);
      expect((await emulator.request('GET', `/v1/acl/info/${id}`)).json).toEqual([]);
    });

    it('1.4 has no roles or service identities; 1.11 has no legacy API', async () => {
      const { emulator, root } = await bootstrapped({ version: '1.4.4' });
      const withRoles = await emulator.request('PUT', '/v1/acl/token', {
        token: root,
        body: { Roles: [{ Name: 'x' }] },
      });
      expect(withRoles.status).toBe(400);
      expect(withRoles.body).toContain("'' has invalid keys: Roles");
      expect((await emulator.request('PUT', '/v1/acl/role', { token: root, body: { Name: 'x' } })).status).toBe(404);
      expect(
        (await emulator.request('PUT', '/v1/acl/create', { token: root, body: { Type: 'management' } })).status,
      ).toBe(200);

      emulator.version = '1.11.0';
      expect((await emulator.request('PUT', '/v1/acl/create', { token: root, body: {} })).status).toBe(404);
      expect((await emulator.request('GET', '/v1/agent/self', { token: root })).json).toMatchObject({
        Config: { Version: '1.11.0+ent' },
      });
    });

    it('node identities from 1.8.1', async () => {
      const { emulator, root } = await bootstrapped({ version: '1.8.0' });
      const body = { NodeIdentities: [{ NodeName: 'n1', Datacenter: 'dc1' }] };
      expect((await emulator.request('PUT', '/v1/acl/token', { token: root, body })).status).toBe(400);
      emulator.version = '1.8.1';
      expect((await emulator.request('PUT', '/v1/acl/token', { token: root, body })).status).toBe(200);
    });
  });

  describe('TLS', () => {
    it('requires a client certificate signed by the configured CA', async () => {
      const ca = createTestCa();
      const server = ca.issue({ commonName: 'server.dc1.consul', usage: 'server' });
      const client = ca.issue({ commonName: 'vault', usage: 'client' });
      const stranger = createTestCa('Other CA').issue({ commonName: 'vault', usage: 'client' });
      const emulator = await consul({ tls: { cert: server.cert, key: server.key, clientCa: ca.cert } });
      expect(emulator.scheme).toBe('https');

      const ok = await emulator.request('PUT', '/v1/acl/bootstrap', {
        tls: { ca: ca.cert, cert: client.cert, key: client.key },
      });
      expect(ok.status).toBe(200);
      await expect(emulator.request('PUT', '/v1/acl/bootstrap', { tls: { ca: ca.cert } })).rejects.toThrow();
      await expect(
        emulator.request('PUT', '/v1/acl/bootstrap', { tls: { ca: ca.cert, cert: stranger.cert, key: stranger.key } }),
      ).rejects.toThrow();
      await expect(
        emulator.request('PUT', '/v1/acl/bootstrap', { tls: { cert: client.cert, key: client.key } }),
      ).rejects.toThrow(/self.signed|unable to (get|verify)/i);
    });
  });

  describe('stop and start', () => {
    it('refuses connections while stopped and keeps its state across a restart', async () => {
      const { emulator, root } = await bootstrapped();
      const token = (await emulator.request('PUT', '/v1/acl/token', { token: root, body: {} })).json as {
        AccessorID: string;
      };
      const address = emulator.address;
      await emulator.stop();
      expect(emulator.running).toBe(false);
      await expect(emulator.request('GET', `/v1/acl/token/${token.AccessorID}`, { token: root })).rejects.toThrow(
        /ECONNREFUSED/,
      );
      await emulator.start();
      expect(emulator.address).toBe(address);
      expect((await emulator.request('GET', `/v1/acl/token/${token.AccessorID}`, { token: root })).status).toBe(200);
    });
  });
});
