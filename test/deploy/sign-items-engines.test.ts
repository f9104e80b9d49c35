/**
 * The migration of the directory (ldap) and cloud engines' items, MACed a release after the other kinds
 * (docs/deployment.md, "Signing a table written before item MACs"): an item an older release wrote carries no MAC and
 * is refused (the engine answers as if it were not there) until the operator runs `functions/deploy/sign-items.ts`,
 * which signs it as the service would (kinds `directory-item` and `cloud-item`, by the mount's type). An item with a
 * wrong MAC is never signed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signItems } from '../../functions/deploy/sign-items.ts';
import { cloudItemKind } from '../../packages/core/src/secrets/engines/cloud/records.ts';
import { directoryItemKind } from '../../packages/core/src/secrets/engines/ldap/records.ts';
import { MountStorage } from '../../packages/core/src/secrets/mounts/mount-storage.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

describe('sign-items signs the directory and cloud engines’ items an older release wrote', () => {
  let h: SecretsService;
  const raw = async (mountPath: string) => {
    const mount = await h.core.mounts.resolve(mountPath);
    return new MountStorage(h.core.store, h.core.keyring, mount?.uuid as string);
  };
  const root = (method: string, path: string) => h.call(method, path, { token: h.rootToken });

  beforeAll(async () => {
    h = await startSecretsInMemory();
    for (const type of ['ldap', 'cloud'])
      expect((await h.call('POST', `/v1/sys/mounts/${type}`, { token: h.rootToken, body: { type } })).status).toBe(204);
    // As the release before wrote them: the same attributes, no MAC.
    const ldap = await raw('ldap/');
    await ldap.putItem('config', {
      value: { url: 'ldap://directory.example:389', binddn: 'cn=manager,dc=example,dc=org', schema: 'openldap' },
      password: ldap.seal('config', 'manager-secret'),
    });
    const cloud = await raw('cloud/');
    await cloud.putItem('roleset/keys', {
      value: {
        secret_type: 'service_account_key',
        service_account_email: 'kh-keys-abcdefgh@proj-1.iam.gserviceaccount.com',
        service_account_project: 'proj-1',
        bindings: { '//cloudresourcemanager.googleapis.com/projects/proj-1': ['roles/viewer'] },
        token_scopes: [],
        generation: 1,
      },
    });
    // And one a table writer forged with a MAC of their own.
    await cloud.putItem('roleset/forged', {
      value: { secret_type: 'access_token', service_account_email: 'root@proj-1.iam.gserviceaccount.com' },
      mac: 'v1:AAAA',
    });
  });
  afterAll(async () => h?.close());

  it('refused before, signed by the command, served after; the forged one stays refused and is reported', async () => {
    expect((await root('GET', '/v1/ldap/config')).status).toBe(404);
    expect((await root('GET', '/v1/cloud/roleset/keys')).status).toBe(404);

    const report = await signItems(h.core.store);
    expect(report.kinds['directory-item']).toEqual({ signed: 1, alreadySigned: 0, refused: 0, changed: 0 });
    expect(report.kinds['cloud-item']?.signed).toBe(1);
    expect(report.kinds['cloud-item']?.refused).toBe(1);
    expect(report.refused).toContainEqual(expect.objectContaining({ kind: 'cloud-item', sk: 'roleset/forged' }));

    const config = await root('GET', '/v1/ldap/config');
    expect(config.status).toBe(200);
    expect(config.body.data).toMatchObject({ url: 'ldap://directory.example:389' });
    const roleset = await root('GET', '/v1/cloud/roleset/keys');
    expect(roleset.status).toBe(200);
    expect(roleset.body.data.service_account_email).toBe('kh-keys-abcdefgh@proj-1.iam.gserviceaccount.com');
    expect((await root('GET', '/v1/cloud/roleset/forged')).status).toBe(404);
    expect(h.core.store.verified(directoryItemKind, await (await raw('ldap/')).getItem('config'))).toBeDefined();
    expect(h.core.store.verified(cloudItemKind, await (await raw('cloud/')).getItem('roleset/keys'))).toBeDefined();
    // A second run signs nothing more.
    const again = await signItems(h.core.store);
    expect(again.kinds['directory-item']).toEqual({ signed: 0, alreadySigned: 1, refused: 0, changed: 0 });
  });
});
