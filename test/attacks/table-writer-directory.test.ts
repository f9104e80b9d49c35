/**
 * Attacker: a table writer (storage is untrusted: docs/security.md), who can edit any item of the directory (ldap)
 * engine's partition but holds no keyring. The engine binds to the directory with its root credential and hands out
 * the passwords of the accounts its items name, so they try:
 *  - pointing the configuration's `url` at their own listener, so the next bind sends the sealed bind password there;
 *  - editing a static role's DN to an entry no role manages, so a rotation changes that entry's password and
 *    `static-cred` hands it to whoever may read the role;
 *  - editing a library set's accounts to another set's account, so a check-out from their set lends it;
 *  - a MAC-less item (as written before the engine's items were MACed, or forged whole).
 * They must never reach: a bind to any server but the configured one, a password of an entry the engine was not told
 * to manage, an account of another set. Each item carries a MAC (`directory-item`, `engines/ldap/records.ts`) that
 * `MountStorage` signs on every write and checks on every read: an edited item reads as absent (the request is
 * refused naming what is missing, the refusal logged by key), and nothing of it is used. Real slapd, DynamoDB Local.
 */
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directoryItemKind, type LdapAccountItem } from '../../packages/core/src/secrets/engines/ldap/records.ts';
import { type LdapEngine, startLdapEngine } from '../support/ldap-engine.ts';
import { baseDn, managerPassword, peopleDn, serviceAccountsDn } from '../support/slapd.ts';

const personDn = (name: string) => `cn=${name},${peopleDn}`;

/** A TCP listener standing for the attacker's server: it keeps every byte sent to it and hangs up. */
async function listener(): Promise<{ url: string; received: () => string; close: () => Promise<void> }> {
  const chunks: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      socket.destroy();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    url: `ldap://127.0.0.1:${port}`,
    received: () => Buffer.concat(chunks).toString('latin1'),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('attack: a table writer edits the directory engine’s items (real slapd)', () => {
  let e: LdapEngine;
  let attacker: Awaited<ReturnType<typeof listener>>;
  const errors: string[] = [];

  beforeAll(async () => {
    e = await startLdapEngine({
      log: {
        info: () => undefined,
        error: (message: string, fields?: Record<string, unknown>) => {
          errors.push(`${message} ${JSON.stringify(fields ?? {})}`);
        },
      },
    });
    attacker = await listener();
    await e.configure({ userdn: baseDn });
    expect((await e.call('POST', 'static-role/alice', { username: 'alice', rotation_period: '24h' })).status).toBe(204);
    for (const [set, account] of [
      ['team-a', 'svc-1'],
      ['team-b', 'svc-2'],
    ] as const)
      expect((await e.call('POST', `library/${set}`, { service_account_names: account, ttl: '1h' })).status).toBe(204);
  });
  afterAll(async () => {
    await attacker?.close();
    await e?.close();
  });

  /** Writes the item as the table writer would: straight to the table, no MAC computed. */
  const forge = async (key: string, item: Record<string, unknown>) => (await e.storage()).putItem(key, item);
  const refusedKeys = () => errors.filter((line) => line.includes('"kind":"directory-item"'));

  it('every item the engine wrote verifies (config, static role, sets, accounts, claims)', async () => {
    const items = await e.h.core.store.list(`mount#${(await e.h.core.mounts.resolve('ldap/'))?.uuid}`);
    const authenticated = items.filter((item) =>
      /^(config|static-role\/|library\/|library-account\/|managed\/)/.test(item.sk),
    );
    expect(authenticated.map((item) => item.sk).sort()).toEqual(
      expect.arrayContaining(['config', 'library-account/svc-1', 'library/team-a', 'static-role/alice']),
    );
    for (const item of authenticated) expect(e.h.core.store.verified(directoryItemKind, item), item.sk).toBeDefined();
  });

  it('a forged `url` never receives the bind password: the configuration reads as absent', async () => {
    const genuine = (await e.item('config')) as LdapAccountItem;
    await forge('config', { ...genuine, value: { ...genuine.value, url: attacker.url, starttls: false } });
    const rotated = await e.call('POST', 'rotate-role/alice');
    expect(rotated.status).toBe(400);
    expect(rotated.body.errors[0]).toMatch(/not configured/);
    expect((await e.call('POST', 'rotate-root')).status).toBe(400);
    expect((await e.call('GET', 'config')).status).toBe(404);
    expect(attacker.received()).not.toContain(managerPassword);
    expect(attacker.received()).toBe('');
    expect(refusedKeys().some((line) => line.includes('"sk":"config"'))).toBe(true);
    // A MAC-less configuration (as before the engine's items were MACed) is refused the same way.
    const { mac: _mac, ...bare } = genuine;
    await forge('config', { ...bare, value: { ...genuine.value, url: attacker.url } });
    expect((await e.call('POST', 'rotate-role/alice')).status).toBe(400);
    expect(attacker.received()).toBe('');
    // The genuine item back: the engine binds to its directory again.
    await forge('config', genuine);
    expect((await e.call('GET', 'config')).body.data.url).toBe(e.slapd.url);
  });

  it('a static role edited to another DN neither rotates that entry nor hands out its password', async () => {
    const genuine = (await e.item('static-role/alice')) as LdapAccountItem;
    await forge('static-role/alice', { ...genuine, value: { ...genuine.value, dn: personDn('frank') } });
    const rotated = await e.call('POST', 'rotate-role/alice');
    expect(rotated.status).toBe(400);
    expect(rotated.body.errors[0]).toContain('no static role named "alice"');
    const read = await e.call('GET', 'static-cred/alice');
    expect(read.status).toBe(404);
    expect(JSON.stringify(read.body)).not.toContain('frank');
    expect(await e.slapd.canBind(personDn('frank'), 'frank-initial')).toBe(true);
    expect(refusedKeys().some((line) => line.includes('"sk":"static-role/alice"'))).toBe(true);
    await forge('static-role/alice', genuine);
    const back = await e.call('GET', 'static-cred/alice');
    expect(back.status).toBe(200);
    expect(back.body.data.dn).toBe(personDn('alice'));
  });

  it("a library set edited to another set's account lends nothing of it", async () => {
    const genuine = (await (await e.storage()).getItem('library/team-a')) as LdapAccountItem;
    const svc2Before = (await e.item('library-account/svc-2')) as LdapAccountItem;
    await forge('library/team-a', { ...genuine, value: { ...genuine.value, service_account_names: ['svc-2'] } });
    const out = await e.call('POST', 'library/team-a/check-out');
    expect(out.status).toBe(404);
    expect(out.body.errors[0]).toContain('no library set named "team-a"');
    const svc2 = (await e.item('library-account/svc-2')) as LdapAccountItem & { available?: boolean };
    expect(svc2.available).toBe(true);
    expect(svc2.password).toBe(svc2Before.password);
    expect((await e.call('LIST', 'library')).body.data.keys).toEqual(['team-b']);
    // An account item edited to another DN is refused as well: team-b lends nothing rather than that entry.
    await forge('library-account/svc-2', {
      ...svc2Before,
      value: { ...(svc2Before.value as object), dn: `cn=svc-3,${serviceAccountsDn}` },
    });
    const other = await e.call('POST', 'library/team-b/check-out');
    expect(other.status).toBe(503);
    expect(other.body.errors[0]).toContain('"library-account/svc-2" failed its integrity check');
    expect(JSON.stringify(other.body)).not.toContain('svc-3');
    expect(await e.slapd.canBind(`cn=svc-3,${serviceAccountsDn}`, 'svc-3-initial')).toBe(true);
    await forge('library/team-a', genuine);
    await forge('library-account/svc-2', svc2Before);
    const lent = await e.call('POST', 'library/team-a/check-out');
    expect(lent.status).toBe(200);
    expect(lent.body.data.service_account_name).toBe('svc-1');
  });
});
