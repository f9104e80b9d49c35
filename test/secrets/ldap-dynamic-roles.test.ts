import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpired } from '../../packages/core/src/entry-points/expiry-sweeps.ts';
import { type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { deletionLdif, rollbackLdif } from '../support/ldif-fixtures.ts';
import { dynamicDn, groupsDn } from '../support/slapd.ts';

const creationLdif = `dn: cn={{.Username}},${dynamicDn}
objectClass: inetOrgPerson
cn: {{.Username}}
sn: {{.RoleName | uppercase}}
description: expires {{.ExpirationTime}} ({{.ExpirationTimeSeconds}})
userPassword: {{.Password}}

dn: cn=developers,${groupsDn}
changetype: modify
add: member
member: cn={{.Username}},${dynamicDn}
-
`;
const developers = `cn=developers,${groupsDn}`;

describe('ldap dynamic roles (real slapd)', () => {
  let e: LdapEngine;
  beforeAll(async () => {
    e = await startLdapEngine();
    await e.configure();
  });
  afterAll(() => e?.close());

  const members = async () => [(await e.slapd.entry(developers))?.member ?? []].flat();
  const revoke = (leaseId: string) =>
    e.h.call('PUT', '/v1/sys/leases/revoke', { token: e.h.rootToken, body: { lease_id: leaseId } });

  it('stores a role, accepting base64 LDIF and returning it decoded', async () => {
    const created = await e.call('POST', 'role/dev', {
      creation_ldif: Buffer.from(creationLdif).toString('base64'),
      deletion_ldif: deletionLdif,
      rollback_ldif: rollbackLdif,
      default_ttl: '1h',
      max_ttl: '2h',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(204);
    expect((await e.call('GET', 'role/dev')).body.data).toEqual({
      creation_ldif: creationLdif,
      deletion_ldif: deletionLdif,
      rollback_ldif: rollbackLdif,
      username_template: '',
      default_ttl: 3600,
      max_ttl: 7200,
    });
  });

  it('updates only the keys sent, and an empty string clears one', async () => {
    expect(
      (
        await e.call('POST', 'role/team/ops', {
          creation_ldif: creationLdif,
          deletion_ldif: deletionLdif,
          rollback_ldif: rollbackLdif,
        })
      ).status,
    ).toBe(204);
    expect((await e.call('POST', 'role/team/ops', { default_ttl: 120, rollback_ldif: '' })).status).toBe(204);
    expect((await e.call('GET', 'role/team/ops')).body.data).toEqual({
      creation_ldif: creationLdif,
      deletion_ldif: deletionLdif,
      rollback_ldif: '',
      username_template: '',
      default_ttl: 120,
      max_ttl: 0,
    });
    expect((await e.call('LIST', 'role')).body.data.keys).toEqual(['dev', 'team/']);
    expect((await e.call('LIST', 'role/team')).body.data.keys).toEqual(['ops']);
    const cleared = await e.call('POST', 'role/team/ops', { creation_ldif: '' });
    expect(cleared.status).toBe(400);
    expect(cleared.body.errors[0]).toContain('creation_ldif');
  });

  it('validates templates and LDIF at write, naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ deletion_ldif: deletionLdif }, 'creation_ldif'],
      [{ creation_ldif: creationLdif }, 'deletion_ldif'],
      [{ creation_ldif: 'cn: no dn first\n', deletion_ldif: deletionLdif }, 'creation_ldif'],
      [{ creation_ldif: creationLdif, deletion_ldif: 'dn: cn={{.Username}\n' }, 'deletion_ldif'],
      [{ creation_ldif: creationLdif, deletion_ldif: 'dn: cn={{.Nope}}\nchangetype: delete\n' }, 'deletion_ldif'],
      [
        { creation_ldif: creationLdif, deletion_ldif: deletionLdif, rollback_ldif: 'dn: x\nchangetype: explode\n' },
        'rollback_ldif',
      ],
      [
        { creation_ldif: creationLdif, deletion_ldif: deletionLdif, username_template: '{{ nosuch }}' },
        'username_template',
      ],
      [
        { creation_ldif: creationLdif, deletion_ldif: deletionLdif, username_template: '{{ utf16le .RoleName }}' },
        'username_template',
      ],
      [{ creation_ldif: creationLdif, deletion_ldif: deletionLdif, max_ttl: '9999h' }, 'max_ttl'],
      [{ creation_ldif: creationLdif, deletion_ldif: deletionLdif, default_ttl: '2h', max_ttl: '1h' }, 'default_ttl'],
      [{ creation_ldif: creationLdif, deletion_ldif: deletionLdif, default_ttl: 'later' }, 'default_ttl'],
    ];
    for (const [body, field] of cases) {
      const response = await e.call('POST', 'role/bad', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.errors[0]).toContain(field);
    }
    expect((await e.call('GET', 'role/bad')).status).toBe(404);
  });

  it('creates the account on read and deletes it when the lease is revoked', async () => {
    const issued = await e.call('GET', 'creds/dev');
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    expect(issued.body).toMatchObject({ renewable: true, lease_duration: 3600 });
    expect(issued.body.lease_id).toMatch(/^ldap\/creds\/dev\/.+/);
    const { username, password, distinguished_names: dns } = issued.body.data;
    expect(username).toMatch(/^v_root_dev_[A-Za-z0-9]{10}_\d+$/);
    const dn = `cn=${username},${dynamicDn}`;
    expect(dns).toEqual([dn, developers]);
    expect(await e.slapd.canBind(dn, password)).toBe(true);
    const entry = await e.slapd.entry(dn);
    expect(entry?.sn).toBe('DEV');
    expect(entry?.description).toBe(
      `expires ${new Date(e.h.clock.now() + 3600_000).toISOString().replace(/\.\d+Z$/, 'Z')} (${Math.floor(e.h.clock.now() / 1000) + 3600})`,
    );
    expect(await members()).toContain(dn);

    expect((await revoke(issued.body.lease_id)).status).toBe(204);
    expect(await e.slapd.exists(dn)).toBe(false);
    expect(await members()).not.toContain(dn);
  });

  it('uses the username template and deletes at lease expiry through the sweep', async () => {
    expect(
      (
        await e.call('POST', 'role/dev', {
          username_template: '{{ printf "%s-%s" .RoleName (random 6) | truncate 20 | lowercase }}',
          default_ttl: 60,
        })
      ).status,
    ).toBe(204);
    const issued = await e.call('GET', 'creds/dev');
    expect(issued.body.data.username).toMatch(/^dev-[a-z0-9]{6}$/);
    expect(issued.body.lease_duration).toBe(60);
    const dn = `cn=${issued.body.data.username},${dynamicDn}`;
    expect(await e.slapd.exists(dn)).toBe(true);
    e.h.clock.advance(61);
    expect((await sweepExpired(e.h.core)).leases).toBe(1);
    expect(await e.slapd.exists(dn)).toBe(false);
  });

  it('renews up to max_ttl', async () => {
    const issued = await e.call('GET', 'creds/dev');
    e.h.clock.advance(30);
    const renew = (increment: number) =>
      e.h.call('PUT', '/v1/sys/leases/renew', {
        token: e.h.rootToken,
        body: { lease_id: issued.body.lease_id, increment },
      });
    const renewed = await renew(600);
    expect(renewed.status).toBe(200);
    expect(renewed.body.lease_duration).toBe(600);
    const capped = await renew(100_000);
    expect(capped.body.lease_duration).toBe(7200 - 30);
    expect((await revoke(issued.body.lease_id)).status).toBe(204);
  });

  it('runs the deletion LDIF even after the role was deleted', async () => {
    const issued = await e.call('GET', 'creds/team/ops');
    const dn = `cn=${issued.body.data.username},${dynamicDn}`;
    expect(await e.slapd.exists(dn)).toBe(true);
    expect((await e.call('DELETE', 'role/team/ops')).status).toBe(204);
    expect((await e.call('GET', 'creds/team/ops')).status).toBe(404);
    expect((await revoke(issued.body.lease_id)).status).toBe(204);
    expect(await e.slapd.exists(dn)).toBe(false);
  });

  it('rolls a failed creation back and names both LDIFs', async () => {
    const failing = creationLdif.replace(`dn: cn=developers,${groupsDn}`, `dn: cn=no-such-group,${groupsDn}`);
    expect(
      (
        await e.call('POST', 'role/broken', {
          creation_ldif: failing,
          deletion_ldif: deletionLdif,
          rollback_ldif: rollbackLdif,
          username_template: 'broken-user',
        })
      ).status,
    ).toBe(204);
    const response = await e.call('GET', 'creds/broken');
    expect(response.status).toBe(502);
    expect(response.body.errors[0]).toContain('creation_ldif failed');
    expect(response.body.errors[0]).toContain('no-such-group');
    expect(response.body.errors[0]).toContain('rollback_ldif was applied');
    expect(await e.slapd.exists(`cn=broken-user,${dynamicDn}`)).toBe(false);

    // Without a rollback the error says so (and the partial account stays for an operator).
    expect((await e.call('POST', 'role/broken', { rollback_ldif: '' })).status).toBe(204);
    const bare = await e.call('GET', 'creds/broken');
    expect(bare.body.errors[0]).toContain('no rollback_ldif');
    // A rollback that fails too: both named.
    expect(
      (await e.call('POST', 'role/broken', { rollback_ldif: `dn: cn=ghost,${dynamicDn}\nchangetype: delete\n` }))
        .status,
    ).toBe(204);
    await e.slapd.entry(`cn=broken-user,${dynamicDn}`);
    const both = await e.call('GET', 'creds/broken');
    expect(both.body.errors[0]).toContain('creation_ldif failed');
    expect(both.body.errors[0]).toContain('rollback_ldif also failed');
  });

  it('keeps a lease whose deletion fails while the directory is down, and deletes on retry', async () => {
    const issued = await e.call('GET', 'creds/dev');
    const dn = `cn=${issued.body.data.username},${dynamicDn}`;
    await e.slapd.stop();
    try {
      expect((await revoke(issued.body.lease_id)).status).toBe(502);
    } finally {
      await e.slapd.start();
    }
    expect(await e.slapd.exists(dn)).toBe(true);
    e.h.clock.advance(11);
    expect((await sweepExpired(e.h.core)).leases).toBe(1);
    expect(await e.slapd.exists(dn)).toBe(false);
  });
});
