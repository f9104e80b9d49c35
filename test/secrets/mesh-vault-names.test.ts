import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ConsulEmulator, startConsulEmulator } from '../emulators/consul.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/** The mesh engine under the names Vault's consul engine uses, and a role write while the server is down. */
let h: SecretsService;
beforeAll(async () => {
  h = await startSecretsInMemory();
});
afterAll(() => h.close());
const started: ConsulEmulator[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((emulator) => emulator.close()));
});

const asRoot = (method: string, url: string, body?: unknown) => h.call(method, url, { token: h.rootToken, body });

let mounts = 0;
async function meshMount(version = '1.15.4'): Promise<{ path: string; emulator: ConsulEmulator }> {
  const emulator = await startConsulEmulator({ version });
  started.push(emulator);
  const bootstrap = await emulator.request('PUT', '/v1/acl/bootstrap');
  const root = (bootstrap.json as { SecretID: string }).SecretID;
  const path = `vault-names${++mounts}`;
  expect((await asRoot('POST', `/v1/sys/mounts/${path}`, { type: 'mesh' })).status).toBe(204);
  expect(
    (
      await asRoot('POST', `/v1/${path}/config/access`, {
        address: emulator.address,
        scheme: emulator.scheme,
        token: root,
      })
    ).status,
  ).toBe(204);
  return { path, emulator };
}

describe('mesh roles under Vault’s names', () => {
  it('takes consul_policies, consul_roles and consul_namespace as mesh_policies, mesh_roles and mesh_namespace', async () => {
    const { path } = await meshMount();
    const written = await asRoot('POST', `/v1/${path}/roles/web`, {
      consul_policies: ['a', 'b'],
      consul_roles: 'r1',
      consul_namespace: 'team-a',
    });
    expect(written.status).toBe(204);
    expect((await asRoot('GET', `/v1/${path}/roles/web`)).body.data).toMatchObject({
      mesh_policies: ['a', 'b'],
      mesh_roles: ['r1'],
      mesh_namespace: 'team-a',
    });
    const both = await asRoot('POST', `/v1/${path}/roles/web`, { consul_policies: 'a', mesh_policies: 'b' });
    expect(both).toMatchObject({
      status: 400,
      body: { errors: ['give "mesh_policies" or its alias "consul_policies", not both'] },
    });
  });

  it('accepts token_type client on any server, and management on a server without legacy tokens as a global-management token', async () => {
    const { path, emulator } = await meshMount('1.15.4');
    expect((await asRoot('POST', `/v1/${path}/roles/c`, { token_type: 'client', consul_policies: 'p' })).status).toBe(
      204,
    );
    expect((await asRoot('POST', `/v1/${path}/roles/admin`, { token_type: 'management' })).status).toBe(204);
    expect((await asRoot('GET', `/v1/${path}/roles/admin`)).body.data).toMatchObject({
      token_type: 'management',
      mesh_policies: ['global-management'],
    });
    const creds = await asRoot('GET', `/v1/${path}/creds/admin`);
    expect(creds.status).toBe(200);
    const token = emulator.token(creds.body.data.accessor);
    expect(token?.Policies.map((policy) => policy.Name)).toEqual(['global-management']);
    expect(token?.Type).toBeUndefined();
  });

  it('writes a role while the server is down, with the version read when the access was configured', async () => {
    const { path, emulator } = await meshMount('1.15.4');
    await emulator.stop();
    h.clock.advance(61); // past the process's own trust in the version it read
    expect((await asRoot('POST', `/v1/${path}/roles/offline`, { consul_policies: 'p', partition: 'p1' })).status).toBe(
      204,
    );
    const refused = await asRoot('POST', `/v1/${path}/roles/offline`, { policy: Buffer.from('x').toString('base64') });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toContain('"policy" was removed in mesh server version 1.11');
  });
});
