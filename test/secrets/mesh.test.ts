import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpired } from '../../packages/core/src/entry-points/expiry-sweeps.ts';
import {
  type ConsulEmulator,
  type ConsulEmulatorOptions,
  type RequestOptions,
  startConsulEmulator,
} from '../emulators/consul.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';
import { createTestCa } from '../support/test-pki.ts';

let h: SecretsHarness;
beforeAll(async () => {
  h = await startSecrets();
});
afterAll(() => h.close());

const started: ConsulEmulator[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((emulator) => emulator.close()));
});

const asRoot = (method: string, url: string, body?: unknown) => h.call(method, url, { token: h.rootToken, body });

interface Server {
  emulator: ConsulEmulator;
  /** The bootstrap (management) token's secret. */
  root: string;
  /** A call to the server as its management token; fails the test unless it answers 200. */
  seed(method: string, path: string, body?: unknown): Promise<unknown>;
}

async function server(options: ConsulEmulatorOptions = {}, tls?: RequestOptions['tls']): Promise<Server> {
  const emulator = await startConsulEmulator(options);
  started.push(emulator);
  const bootstrap = await emulator.request('PUT', '/v1/acl/bootstrap', { tls });
  expect(bootstrap.status).toBe(200);
  const root = (bootstrap.json as { SecretID?: string; ID: string }).SecretID ?? (bootstrap.json as { ID: string }).ID;
  return {
    emulator,
    root,
    async seed(method, path, body) {
      const reply = await emulator.request(method, path, { token: root, body, tls });
      expect({ status: reply.status, body: reply.body }).toMatchObject({ status: 200 });
      return reply.json;
    },
  };
}

let mounts = 0;
/** A fresh `mesh` mount (so each test has its own config and roles); with `access`, its config too. */
async function mount(access?: Record<string, unknown>): Promise<string> {
  const path = `mesh${++mounts}`;
  expect((await asRoot('POST', `/v1/sys/mounts/${path}`, { type: 'mesh' })).status).toBe(204);
  if (access) expect((await asRoot('POST', `/v1/${path}/config/access`, access)).body).toBeUndefined();
  return path;
}

const accessTo = (s: Server) => ({ address: s.emulator.address, scheme: s.emulator.scheme, token: s.root });
const base64 = (text: string) => Buffer.from(text).toString('base64');
const leaseLookup = (leaseId: string) => asRoot('PUT', '/v1/sys/leases/lookup', { lease_id: leaseId });

describe('mesh engine', () => {
  describe('config/access', () => {
    it('a read before any config is a 400 that says where to write it', async () => {
      const path = await mount();
      const read = await asRoot('GET', `/v1/${path}/config/access`);
      expect(read.status).toBe(400);
      expect(read.body.errors).toEqual([
        `the mesh server's access has not been configured: write its address and a management token to ${path}/config/access`,
      ]);
    });

    it('shows address and scheme only, and keeps the token sealed in the table', async () => {
      const s = await server();
      const path = await mount(accessTo(s));
      const read = await asRoot('GET', `/v1/${path}/config/access`);
      expect(read.status).toBe(200);
      expect(read.body.data).toEqual({ address: s.emulator.address, scheme: 'http' });
      const entry = (await h.core.mounts.list()).find((candidate) => candidate.path === `${path}/`);
      const stored = JSON.stringify(await h.core.store.list(`mount#${entry?.uuid}`));
      expect(stored).toContain(s.emulator.address);
      expect(stored).not.toContain(s.root);
    });

    it('is replaced on write, not merged', async () => {
      const s = await server();
      const path = await mount({ ...accessTo(s), token: 'a2b7b8c1-0000-4000-8000-00000000dead' });
      await s.seed('PUT', '/v1/acl/policy', { Name: 'p' });
      expect((await asRoot('POST', `/v1/${path}/roles/app`, { mesh_policies: 'p' })).body.errors[0]).toContain(
        'ACL not found',
      );

      expect(
        (
          await asRoot('POST', `/v1/${path}/config/access`, {
            address: s.emulator.address,
            scheme: 'https',
            token: s.root,
          })
        ).status,
      ).toBe(204);
      expect((await asRoot('GET', `/v1/${path}/config/access`)).body.data.scheme).toBe('https');
      expect(
        (await asRoot('POST', `/v1/${path}/config/access`, { address: s.emulator.address, token: s.root })).status,
      ).toBe(204);
      expect((await asRoot('GET', `/v1/${path}/config/access`)).body.data).toEqual({
        address: s.emulator.address,
        scheme: 'http',
      });
      expect((await asRoot('POST', `/v1/${path}/roles/app`, { mesh_policies: 'p' })).status).toBe(204);
      expect((await asRoot('GET', `/v1/${path}/creds/app`)).status).toBe(200);
    });

    it('refuses a missing address, a foreign scheme, a half client certificate and bad PEM, naming the field', async () => {
      const path = await mount();
      const ca = createTestCa();
      const client = ca.issue({ commonName: 'keyhaven', usage: 'client' });
      const other = ca.issue({ commonName: 'other', usage: 'client' });
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ token: 't' }, 'invalid value for "address": is required'],
        [
          { address: 'ftp://127.0.0.1:1', token: 't' },
          'invalid value for "address": scheme "ftp" is not http or https',
        ],
        [{ address: '127.0.0.1:1/v1', token: 't' }, 'invalid value for "address": "127.0.0.1:1/v1" is not host:port'],
        [{ address: 'https://127.0.0.1:1', scheme: 'http', token: 't' }, 'it says https but "scheme" is http'],
        [{ address: '127.0.0.1:1', scheme: 'gopher', token: 't' }, 'invalid value for "scheme"'],
        [
          { address: '127.0.0.1:1', token: 't', client_cert: client.cert },
          '"client_cert" and "client_key" go together: "client_key" is missing',
        ],
        [
          { address: '127.0.0.1:1', token: 't', client_key: client.key },
          '"client_cert" and "client_key" go together: "client_cert" is missing',
        ],
        [
          { address: '127.0.0.1:1', token: 't', ca_cert: 'not a certificate' },
          'invalid value for "ca_cert": not a PEM certificate',
        ],
        [
          { address: '127.0.0.1:1', token: 't', client_cert: client.cert, client_key: other.key },
          'invalid value for "client_key": it is not the key of "client_cert"',
        ],
        [
          { address: '127.0.0.1:1', token: 't', client_cert: client.cert, client_key: 'junk' },
          'invalid value for "client_key": not a PEM private key',
        ],
      ];
      for (const [body, message] of cases) {
        const reply = await asRoot('POST', `/v1/${path}/config/access`, body);
        expect({ body, status: reply.status }).toEqual({ body, status: 400 });
        expect(reply.body.errors[0]).toContain(message);
      }
      expect((await asRoot('GET', `/v1/${path}/config/access`)).status).toBe(400);
    });

    it('without a token, bootstraps the server and keeps the management token it returns', async () => {
      const emulator = await startConsulEmulator();
      started.push(emulator);
      const path = await mount({ address: emulator.address });
      const [bootstrapToken] = emulator.tokens();
      expect(bootstrapToken).toMatchObject({
        Description: 'Bootstrap Token (Global Management)',
        Policies: [{ Name: 'global-management' }],
      });
      expect((await asRoot('GET', `/v1/${path}/config/access`)).body.data).toEqual({
        address: emulator.address,
        scheme: 'http',
      });

      // The kept token works: it reads the version, and creates and deletes tokens.
      expect((await asRoot('POST', `/v1/${path}/roles/api`, { service_identities: 'api' })).status).toBe(204);
      const creds = await asRoot('GET', `/v1/${path}/creds/api`);
      expect(emulator.token(creds.body.data.accessor)).toMatchObject({ ServiceIdentities: [{ ServiceName: 'api' }] });

      const second = await mount();
      const refused = await asRoot('POST', `/v1/${second}/config/access`, { address: emulator.address });
      expect(refused.status).toBe(400);
      expect(refused.body.errors[0]).toMatch(
        /^no token was given and bootstrapping the mesh server's ACL system failed: Unexpected response code: 403 \(Permission denied: ACL bootstrap no longer allowed \(reset index: \d+\)\)$/,
      );
      await emulator.stop();
      const down = await asRoot('POST', `/v1/${second}/config/access`, { address: emulator.address });
      expect(down.status).toBe(502);
      expect(down.body.errors[0]).toContain(
        `the mesh server at http://${emulator.address} is unreachable: connect ECONNREFUSED`,
      );
    });

    it('bootstraps a server below 1.4, whose bootstrap answers only an ID', async () => {
      const emulator = await startConsulEmulator({ version: '1.3.1' });
      started.push(emulator);
      const path = await mount({ address: emulator.address });
      expect((await asRoot('POST', `/v1/${path}/roles/legacy`, { token_type: 'management' })).status).toBe(200);
      const creds = await asRoot('GET', `/v1/${path}/creds/legacy`);
      expect(emulator.token(creds.body.data.token)).toMatchObject({ Type: 'management' });
    });

    it('speaks TLS with the given CA and client certificate', async () => {
      const ca = createTestCa();
      const serverCert = ca.issue({ commonName: 'server.dc1.consul', usage: 'server' });
      const client = ca.issue({ commonName: 'keyhaven', usage: 'client' });
      const tls = { ca: ca.cert, cert: client.cert, key: client.key };
      const s = await server({ tls: { cert: serverCert.cert, key: serverCert.key, clientCa: ca.cert } }, tls);
      await s.seed('PUT', '/v1/acl/policy', { Name: 'svc-read' });
      const access = {
        address: s.emulator.address,
        scheme: 'https',
        token: s.root,
        ca_cert: ca.cert,
        client_cert: client.cert,
        client_key: client.key,
      };
      const path = await mount(access);
      expect((await asRoot('POST', `/v1/${path}/roles/app`, { mesh_policies: ['svc-read'] })).status).toBe(204);
      const creds = await asRoot('GET', `/v1/${path}/creds/app`);
      expect(creds.status).toBe(200);
      expect(s.emulator.token(creds.body.data.accessor)?.Policies).toEqual([
        { ID: expect.any(String), Name: 'svc-read' },
      ]);
      expect((await asRoot('PUT', '/v1/sys/leases/revoke', { lease_id: creds.body.lease_id })).status).toBe(204);
      expect(s.emulator.token(creds.body.data.accessor)).toBeUndefined();

      // Without the client certificate, or trusting another CA, the server cannot be reached.
      const noClientCert = await mount({
        address: s.emulator.address,
        scheme: 'https',
        token: s.root,
        ca_cert: ca.cert,
      });
      const refused = await asRoot('POST', `/v1/${noClientCert}/roles/app`, { mesh_policies: ['svc-read'] });
      expect(refused.status).toBe(502);
      expect(refused.body.errors[0]).toContain('unreachable');
      const otherCa = await mount({ ...access, ca_cert: createTestCa('Another CA').cert });
      const untrusted = await asRoot('POST', `/v1/${otherCa}/roles/app`, { mesh_policies: ['svc-read'] });
      expect(untrusted.status).toBe(502);
      expect(untrusted.body.errors[0]).toMatch(/unreachable: .*(self.signed|unable to (get|verify))/i);
    });
  });

  describe('roles', () => {
    it('create, read, list and delete; a missing role reads as 404 and deletes as success', async () => {
      const s = await server();
      const path = await mount(accessTo(s));
      expect((await asRoot('GET', `/v1/${path}/roles/web`)).status).toBe(404);
      expect((await asRoot('LIST', `/v1/${path}/roles`)).status).toBe(404);
      expect(
        (await asRoot('POST', `/v1/${path}/roles/web`, { mesh_policies: 'web-read', ttl: '1h', max_ttl: 7200 })).status,
      ).toBe(204);
      expect((await asRoot('POST', `/v1/${path}/roles/db`, { mesh_roles: ['db-ops'] })).status).toBe(204);
      expect((await asRoot('LIST', `/v1/${path}/roles/`)).body.data.keys).toEqual(['db', 'web']);
      expect((await asRoot('GET', `/v1/${path}/roles?list=true`)).body.data.keys).toEqual(['db', 'web']);
      expect((await asRoot('DELETE', `/v1/${path}/roles/web`)).status).toBe(204);
      expect((await asRoot('DELETE', `/v1/${path}/roles/web`)).status).toBe(204);
      expect((await asRoot('GET', `/v1/${path}/roles/web`)).status).toBe(404);
      expect((await asRoot('LIST', `/v1/${path}/roles`)).body.data.keys).toEqual(['db']);
    });

    it('reads back every documented field, lease as a Go duration and the policy as base64', async () => {
      const s = await server();
      const path = await mount(accessTo(s));
      await asRoot('POST', `/v1/${path}/roles/full`, {
        mesh_policies: 'a, b',
        mesh_roles: 'r1,r2',
        service_identities: 'api,web:dc1,dc2',
        node_identities: ['node-1:dc1', 'node-2:dc2'],
        mesh_namespace: 'team-a',
        partition: 'part1',
        ttl: '1h',
        max_ttl: '2h',
      });
      expect((await asRoot('GET', `/v1/${path}/roles/full`)).body.data).toEqual({
        mesh_policies: ['a', 'b'],
        mesh_roles: ['r1', 'r2'],
        service_identities: ['api', 'web:dc1,dc2'],
        node_identities: ['node-1:dc1', 'node-2:dc2'],
        mesh_namespace: 'team-a',
        partition: 'part1',
        local: false,
        ttl: 3600,
        max_ttl: 7200,
        lease: '1h0m0s',
        token_type: 'client',
      });
      s.emulator.version = '1.10.0';
      h.clock.advance(61); // past the engine's trust in the version it read
      const rules = 'key_prefix "" { policy = "read" }';
      expect((await asRoot('POST', `/v1/${path}/roles/legacy`, { policy: base64(rules), lease: '90m' })).status).toBe(
        200,
      );
      expect((await asRoot('GET', `/v1/${path}/roles/legacy`)).body.data).toEqual({
        mesh_namespace: '',
        partition: '',
        local: false,
        ttl: 5400,
        max_ttl: 0,
        lease: '1h30m0s',
        token_type: 'client',
        policy: base64(rules),
      });
    });

    it('lists are arrays or comma-separated strings; service identities may also be split by ";"', async () => {
      const s = await server();
      const path = await mount(accessTo(s));
      const identities = async (value: unknown) => {
        await asRoot('POST', `/v1/${path}/roles/ids`, { service_identities: value });
        return (await asRoot('GET', `/v1/${path}/roles/ids`)).body.data.service_identities;
      };
      expect(await identities('web:dc1,dc2')).toEqual(['web:dc1,dc2']);
      expect(await identities('web:dc1;api')).toEqual(['web:dc1', 'api']);
      expect(await identities('api, db ,web:dc1, dc2,cache:dc3')).toEqual(['api', 'db', 'web:dc1,dc2', 'cache:dc3']);
      expect(await identities(['web:dc1,dc2', 'api'])).toEqual(['web:dc1,dc2', 'api']);
    });

    it('the deprecated "policies" is an alias of "mesh_policies", with a warning', async () => {
      const s = await server();
      const path = await mount(accessTo(s));
      const written = await asRoot('POST', `/v1/${path}/roles/old`, { policies: 'p1,p2' });
      expect(written.status).toBe(200);
      expect(written.body.warnings).toEqual(['"policies" is deprecated: use "mesh_policies"']);
      expect((await asRoot('GET', `/v1/${path}/roles/old`)).body.data.mesh_policies).toEqual(['p1', 'p2']);
      const both = await asRoot('POST', `/v1/${path}/roles/old`, { policies: 'p1', mesh_policies: 'p2' });
      expect(both.body.errors).toEqual(['give "mesh_policies" or its deprecated alias "policies", not both']);
    });

    it('refuses malformed fields, naming them', async () => {
      const s = await server({ version: '1.10.0' }); // the last version with every field but partition
      const path = await mount(accessTo(s));
      const cases: Array<[string, Record<string, unknown>, string]> = [
        ['web', { mesh_policies: 'p', token_type: 'root' }, 'invalid value for "token_type"'],
        ['web', { policy: 'not base64!' }, 'invalid value for "policy": not base64'],
        [
          'web',
          { service_identities: 'Web:dc1' },
          'invalid value for "service_identities": "Web:dc1" is not <service>',
        ],
        ['web', { service_identities: 'web:' }, 'invalid value for "service_identities": "web:"'],
        ['web', { service_identities: 'web:dc1', local: true }, 'names datacenters, which a local token cannot have'],
        [
          'web',
          { node_identities: 'node-1' },
          'invalid value for "node_identities": "node-1" is not <node>:<datacenter>',
        ],
        ['web', { mesh_policies: 'p', ttl: 'soon' }, 'invalid value for "ttl"'],
        ['web', { mesh_policies: 'p', local: 'yes' }, 'invalid value for "local"'],
        ['bad name!', { mesh_policies: 'p' }, 'invalid value for "name"'],
      ];
      for (const [name, body, message] of cases) {
        const reply = await asRoot('POST', `/v1/${path}/roles/${encodeURIComponent(name)}`, body);
        expect({ body, status: reply.status }).toEqual({ body, status: 400 });
        expect(reply.body.errors[0]).toContain(message);
      }
    });

    it('needs the access config first: the server version decides which fields are valid', async () => {
      const path = await mount();
      const reply = await asRoot('POST', `/v1/${path}/roles/web`, { mesh_policies: 'p' });
      expect(reply.status).toBe(400);
      expect(reply.body.errors[0]).toContain(`write its address and a management token to ${path}/config/access`);
    });

    it('accepts the fields the server version has, and requires what it needs', async () => {
      const s = await server({ version: '1.3.1' });
      const path = await mount(accessTo(s));
      const expectations: Array<[string, Array<[Record<string, unknown>, number | string]>]> = [
        [
          '1.3.1',
          [
            [
              { mesh_policies: 'p' },
              '"mesh_policies" needs mesh server version 1.4 or later; the mesh server at ADDRESS runs 1.3.1+ent',
            ],
            [
              { policy: base64('key "" { policy = "read" }'), local: true },
              '"local" needs mesh server version 1.4 or later',
            ],
            [
              {},
              '"policy" is required unless "token_type" is "management": mesh server version 1.3.1+ent has only legacy tokens',
            ],
            [{ token_type: 'client' }, '"policy" is required unless "token_type" is "management"'],
            [{ policy: base64('key "" { policy = "read" }') }, 200],
            [{ token_type: 'management' }, 200],
            [{ policy: base64('x'), ttl: '1h', max_ttl: '2h' }, 200],
          ],
        ],
        [
          '1.4.4',
          [
            [{ mesh_roles: 'r' }, '"mesh_roles" needs mesh server version 1.5 or later'],
            [{ service_identities: 'web' }, '"service_identities" needs mesh server version 1.5 or later'],
            [
              {},
              '"mesh_policies" is required by mesh server version 1.4.4+ent, or a legacy "policy" (or "token_type": "management")',
            ],
            [{ mesh_policies: 'p', local: true }, 204],
            [
              { policy: base64('x'), mesh_policies: 'p' },
              'a role with "policy" or "token_type": "management" makes a legacy token, which has no "mesh_policies"',
            ],
            [{ token_type: 'management', local: true }, 'makes a legacy token, which has no "local"'],
          ],
        ],
        [
          '1.6.0',
          [
            [
              { mesh_namespace: 'team-a', mesh_policies: 'p' },
              '"mesh_namespace" needs mesh server version 1.7 or later',
            ],
            [{ service_identities: 'web:dc1' }, 204],
            [
              {},
              'at least one of "mesh_policies", "mesh_roles", "service_identities" is required by mesh server version 1.6.0+ent',
            ],
          ],
        ],
        [
          '1.7.2',
          [
            [{ node_identities: 'n1:dc1' }, '"node_identities" needs mesh server version 1.8 or later'],
            [{ mesh_namespace: 'team-a', mesh_roles: 'r' }, 204],
          ],
        ],
        [
          '1.10.0',
          [
            [{ partition: 'p1', mesh_policies: 'p' }, '"partition" needs mesh server version 1.11 or later'],
            [
              { local: true },
              'at least one of "mesh_policies", "mesh_roles", "service_identities", "node_identities" is required by mesh server version 1.10.0+ent, or a legacy',
            ],
            [{ node_identities: 'n1:dc1' }, 204],
            [{ policy: base64('x') }, 200],
          ],
        ],
        [
          '1.11.0',
          [
            [
              { policy: base64('x') },
              '"policy" was removed in mesh server version 1.11; the mesh server at ADDRESS runs 1.11.0+ent',
            ],
            [{ token_type: 'client', mesh_policies: 'p' }, 204],
            [{ lease: '1h', mesh_policies: 'p' }, '"lease" was removed in mesh server version 1.11'],
            [
              {},
              'at least one of "mesh_policies", "mesh_roles", "service_identities", "node_identities" is required by mesh server version 1.11.0+ent',
            ],
            [{ partition: 'p1', mesh_namespace: 'ns', mesh_policies: 'p' }, 204],
          ],
        ],
      ];
      for (const [version, cases] of expectations) {
        s.emulator.version = version;
        h.clock.advance(61);
        for (const [body, expected] of cases) {
          const reply = await asRoot('POST', `/v1/${path}/roles/r`, body);
          if (typeof expected === 'number') {
            expect({ version, body, status: reply.status, errors: reply.body?.errors }).toEqual({
              version,
              body,
              status: expected,
              errors: undefined,
            });
          } else {
            expect({ version, body, status: reply.status }).toEqual({ version, body, status: 400 });
            expect(reply.body.errors[0]).toContain(expected.replace('ADDRESS', s.emulator.address));
          }
        }
      }
      // From 1.11 on there is no legacy way out to suggest.
      expect((await asRoot('POST', `/v1/${path}/roles/r`, {})).body.errors).toEqual([
        'at least one of "mesh_policies", "mesh_roles", "service_identities", "node_identities" is required by mesh server version 1.11.0+ent',
      ]);
    });
  });

  describe('creds', () => {
    it('create a token with exactly the role attributes, in its namespace and partition, under a renewable lease', async () => {
      const s = await server();
      await s.seed('PUT', '/v1/partition', { Name: 'part1' });
      await s.seed('PUT', '/v1/namespace', { Name: 'team-a', Partition: 'part1' });
      const policy = (await s.seed('PUT', '/v1/acl/policy?ns=team-a&partition=part1', { Name: 'web-read' })) as {
        ID: string;
      };
      const role = (await s.seed('PUT', '/v1/acl/role?ns=team-a&partition=part1', { Name: 'web-ops' })) as {
        ID: string;
      };
      const path = await mount(accessTo(s));
      await asRoot('POST', `/v1/${path}/roles/web`, {
        mesh_policies: ['web-read'],
        mesh_roles: 'web-ops',
        service_identities: 'api,web:dc1,dc2',
        node_identities: 'node-1:dc1',
        mesh_namespace: 'team-a',
        partition: 'part1',
        ttl: '1h',
        max_ttl: '2h',
      });

      const reply = await asRoot('GET', `/v1/${path}/creds/web`);
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({
        lease_id: expect.stringMatching(new RegExp(`^${path}/creds/web/\\w+$`)),
        renewable: true,
        lease_duration: 3600,
        data: {
          token: expect.any(String),
          accessor: expect.any(String),
          local: false,
          mesh_namespace: 'team-a',
          partition: 'part1',
        },
      });
      expect(Object.keys(reply.body.data).sort()).toEqual([
        'accessor',
        'local',
        'mesh_namespace',
        'partition',
        'token',
      ]);

      const token = s.emulator.token(reply.body.data.accessor);
      expect(token).toEqual({
        AccessorID: reply.body.data.accessor,
        SecretID: reply.body.data.token,
        Description: `Vault web root ${BigInt(h.clock.now()) * 1_000_000n}`,
        Policies: [{ ID: policy.ID, Name: 'web-read' }],
        Roles: [{ ID: role.ID, Name: 'web-ops' }],
        ServiceIdentities: [{ ServiceName: 'api' }, { ServiceName: 'web', Datacenters: ['dc1', 'dc2'] }],
        NodeIdentities: [{ NodeName: 'node-1', Datacenter: 'dc1' }],
        Local: false,
        Namespace: 'team-a',
        Partition: 'part1',
      });
      const lookup = await leaseLookup(reply.body.lease_id);
      expect(lookup.body.data).toMatchObject({ renewable: true, ttl: 3600 });
    });

    it('a local token in the default namespace and partition', async () => {
      const s = await server();
      await s.seed('PUT', '/v1/acl/policy', { Name: 'node-read' });
      const path = await mount(accessTo(s));
      await asRoot('POST', `/v1/${path}/roles/local`, { mesh_policies: 'node-read', local: true });
      const reply = await asRoot('GET', `/v1/${path}/creds/local`);
      expect(reply.body.data).toMatchObject({ local: true, mesh_namespace: 'default', partition: 'default' });
      expect(s.emulator.token(reply.body.data.accessor)).toMatchObject({
        Local: true,
        Namespace: 'default',
        Partition: 'default',
        Roles: [],
      });
      // The mount's default lease TTL applies when the role sets none.
      expect(reply.body.lease_duration).toBe(768 * 3600);
    });

    it('a missing role is a 400; a server that refuses says why', async () => {
      const s = await server();
      const path = await mount(accessTo(s));
      expect((await asRoot('GET', `/v1/${path}/creds/nothing`)).body).toEqual({ errors: ['role "nothing" not found'] });
      await asRoot('POST', `/v1/${path}/roles/web`, { mesh_policies: 'missing-policy' });
      const refused = await asRoot('GET', `/v1/${path}/creds/web`);
      expect(refused.status).toBe(400);
      expect(refused.body.errors).toEqual([
        'the mesh server did not create the token: Unexpected response code: 500 (No such ACL policy with name "missing-policy")',
      ]);
      expect(s.emulator.tokens()).toHaveLength(1); // the bootstrap token only
    });

    it('renewal re-reads the role: its TTL applies, and a deleted role ends renewals', async () => {
      const s = await server();
      await s.seed('PUT', '/v1/acl/policy', { Name: 'p' });
      const path = await mount(accessTo(s));
      await asRoot('POST', `/v1/${path}/roles/web`, { mesh_policies: 'p', ttl: '1h', max_ttl: '3h' });
      const creds = await asRoot('GET', `/v1/${path}/creds/web`);
      await asRoot('POST', `/v1/${path}/roles/web`, { mesh_policies: 'p', ttl: '30m', max_ttl: '3h' });
      const renewed = await asRoot('PUT', '/v1/sys/leases/renew', { lease_id: creds.body.lease_id });
      expect(renewed.status).toBe(200);
      expect(renewed.body.lease_duration).toBe(1800);

      await asRoot('DELETE', `/v1/${path}/roles/web`);
      const refused = await asRoot('PUT', '/v1/sys/leases/renew', { lease_id: creds.body.lease_id });
      expect(refused.status).toBe(400);
      expect(refused.body.errors).toEqual(['issuing role "web" not found']);
      expect(s.emulator.token(creds.body.data.accessor)).toBeDefined();
    });

    it('revocation deletes the token on the server, in its namespace and partition', async () => {
      const s = await server();
      await s.seed('PUT', '/v1/partition', { Name: 'part2' });
      await s.seed('PUT', '/v1/namespace', { Name: 'team-b', Partition: 'part2' });
      const path = await mount(accessTo(s));
      await asRoot('POST', `/v1/${path}/roles/svc`, {
        service_identities: 'billing',
        mesh_namespace: 'team-b',
        partition: 'part2',
      });
      const creds = await asRoot('GET', `/v1/${path}/creds/svc`);
      expect(s.emulator.token(creds.body.data.accessor)).toMatchObject({ Namespace: 'team-b', Partition: 'part2' });

      expect((await asRoot('PUT', '/v1/sys/leases/revoke', { lease_id: creds.body.lease_id })).status).toBe(204);
      expect(s.emulator.token(creds.body.data.accessor)).toBeUndefined();
      expect(s.emulator.requests.at(-1)).toEqual({
        method: 'DELETE',
        path: `/v1/acl/token/${creds.body.data.accessor}`,
        query: { ns: 'team-b', partition: 'part2' },
      });
      expect((await leaseLookup(creds.body.lease_id)).status).toBe(404);
    });

    it('expiry deletes the token on the server', async () => {
      const s = await server();
      await s.seed('PUT', '/v1/acl/policy', { Name: 'p' });
      const path = await mount(accessTo(s));
      await asRoot('POST', `/v1/${path}/roles/short`, { mesh_policies: 'p', ttl: 60 });
      const creds = await asRoot('GET', `/v1/${path}/creds/short`);
      expect(creds.body.lease_duration).toBe(60);
      h.clock.advance(30);
      await sweepExpired(h.core);
      expect(s.emulator.token(creds.body.data.accessor)).toBeDefined();
      h.clock.advance(31);
      await sweepExpired(h.core);
      expect(s.emulator.token(creds.body.data.accessor)).toBeUndefined();
      expect((await leaseLookup(creds.body.lease_id)).status).toBe(404);
    });

    it('while the server is down, revocation fails and is retried with backoff until it is done', async () => {
      const s = await server();
      await s.seed('PUT', '/v1/acl/policy', { Name: 'p' });
      const path = await mount(accessTo(s));
      await asRoot('POST', `/v1/${path}/roles/web`, { mesh_policies: 'p', ttl: 60 });
      const creds = await asRoot('GET', `/v1/${path}/creds/web`);
      const { accessor } = creds.body.data;

      await s.emulator.stop();
      h.clock.advance(61);
      await sweepExpired(h.core);
      const failed = await leaseLookup(creds.body.lease_id);
      expect(failed.status).toBe(200);
      expect(failed.body.data).toMatchObject({ revocation_attempts: 1, irrevocable: false });
      expect(failed.body.data.last_revocation_error).toContain('unreachable: connect ECONNREFUSED');

      await s.emulator.start();
      await sweepExpired(h.core); // the retry is not due yet
      expect((await leaseLookup(creds.body.lease_id)).body.data.revocation_attempts).toBe(1);
      expect(s.emulator.token(accessor)).toBeDefined();

      h.clock.advance(11);
      await sweepExpired(h.core);
      expect(s.emulator.token(accessor)).toBeUndefined();
      expect((await leaseLookup(creds.body.lease_id)).status).toBe(404);
    });

    it('legacy roles on a server below 1.4 use /v1/acl/create and /v1/acl/destroy', async () => {
      const s = await server({ version: '1.3.1' });
      const path = await mount(accessTo(s));
      const rules = 'key "app/" { policy = "read" }';
      await asRoot('POST', `/v1/${path}/roles/app`, { policy: base64(rules), ttl: '10m' });
      const creds = await asRoot('GET', `/v1/${path}/creds/app`);
      expect(creds.status).toBe(200);
      expect(Object.keys(creds.body.data)).toEqual(['token']);
      expect(creds.body).toMatchObject({ renewable: true, lease_duration: 600 });
      expect(s.emulator.token(creds.body.data.token)).toMatchObject({
        Type: 'client',
        Rules: rules,
        Description: expect.stringMatching(/^Vault app root \d{19}$/),
      });
      expect(s.emulator.requests.some((request) => request.path === '/v1/acl/create')).toBe(true);

      expect((await asRoot('PUT', '/v1/sys/leases/revoke', { lease_id: creds.body.lease_id })).status).toBe(204);
      expect(s.emulator.token(creds.body.data.token)).toBeUndefined();
      expect(s.emulator.requests.at(-1)?.path).toBe(`/v1/acl/destroy/${creds.body.data.token}`);
    });

    it('a legacy role on a server upgraded to 1.11 is refused with what to do', async () => {
      const s = await server({ version: '1.10.3' });
      const path = await mount(accessTo(s));
      await asRoot('POST', `/v1/${path}/roles/old`, { token_type: 'management' });
      const creds = await asRoot('GET', `/v1/${path}/creds/old`);
      expect(s.emulator.token(creds.body.data.token)).toMatchObject({ Type: 'management' });

      s.emulator.version = '1.11.0';
      h.clock.advance(61);
      const refused = await asRoot('GET', `/v1/${path}/creds/old`);
      expect(refused.status).toBe(400);
      expect(refused.body.errors).toEqual([
        'role "old" makes a legacy token ("policy", "token_type"), which mesh server version 1.11.0+ent no longer issues: rewrite the role with "mesh_policies"',
      ]);
    });
  });
});
