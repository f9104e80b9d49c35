/**
 * Attacker: a table writer on the scheduler's table. With ACLs bootstrapped, a missing bootstrap marker beside any
 * ACL item is refused as tampering, so they delete every ACL item (tokens, their secrets' links, policies, roles,
 * auth methods, binding rules) and the marker, bootstrap again anonymously, and put the old items (genuinely MACed)
 * back, keeping a management token of their own while every earlier token goes on working, so nobody notices.
 * They must never reach: an ACL state in which both the earlier items and their new token verify. Each bootstrap
 * chooses an epoch (kept in the MACed bootstrap marker) that the MAC of every ACL kind binds (`ItemKind.epoch`):
 * items of an earlier bootstrap never verify after a new one, in any process, so the earlier tokens stop working and
 * the takeover shows. A process started before the genuine bootstrap reads the epoch before its first request.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../packages/core/src/storage/memory-store.ts';
import type { Item } from '../../packages/core/src/storage/store.ts';
import { serviceProcess } from '../support/replay-process.ts';

/** The partitions of ACL items, and the marker's. */
const aclPartitions = [
  'sched#token',
  'sched#secret',
  'sched#policy',
  'sched#role',
  'sched#role-name',
  'sched#auth-method',
  'sched#binding-rule',
];

/** A scheduler process over the shared table: its own core and keyring cache. */
const schedulerProcess = (store: MemoryStore, keyFile: string) =>
  serviceProcess('scheduler', store, keyFile, Date.UTC(2026, 0, 1));

describe('attack: a second ACL bootstrap with the earlier ACL items put back', () => {
  const store = new MemoryStore();
  const keyFile = path.join(mkdtempSync(path.join(tmpdir(), 'keyhaven-rebootstrap-')), 'keyring.key');
  let first: Awaited<ReturnType<typeof schedulerProcess>>;
  let early: Awaited<ReturnType<typeof schedulerProcess>>;
  let management: string;
  let client: { AccessorID: string; SecretID: string };

  beforeAll(async () => {
    first = await schedulerProcess(store, keyFile);
    early = await schedulerProcess(store, keyFile);
    const boot = await first.call('POST', '/v1/acl/bootstrap');
    expect(boot.status).toBe(200);
    management = boot.body.SecretID;
    const policy = await first.call('POST', '/v1/acl/policy/readjobs', management, {
      Name: 'readjobs',
      Rules: 'namespace "default" { policy = "read" }',
    });
    expect(policy.status).toBe(200);
    const created = await first.call('POST', '/v1/acl/token', management, {
      Name: 'reader',
      Type: 'client',
      Policies: ['readjobs'],
    });
    expect(created.status).toBe(200);
    client = created.body;
  });

  it('a process started before the bootstrap takes its epoch: the tokens work there at once', async () => {
    expect((await early.call('GET', '/v1/acl/token/self', management)).status).toBe(200);
    const self = await early.call('GET', '/v1/acl/token/self', client.SecretID);
    expect(self.status).toBe(200);
    expect(self.body.Policies).toEqual(['readjobs']);
  });

  it('the ACL items put back after a second bootstrap verify in no process, so the takeover shows', async () => {
    const kept: Item[] = [];
    for (const partition of aclPartitions) kept.push(...(await store.list(partition)));
    expect(kept.length).toBeGreaterThanOrEqual(5);
    for (const item of kept) await store.delete({ pk: item.pk, sk: item.sk });
    await store.delete({ pk: 'sched#meta', sk: 'bootstrap' });
    const again = await first.call('POST', '/v1/acl/bootstrap');
    expect(again.status).toBe(200);
    const stolen = again.body.SecretID as string;
    for (const item of kept) await store.put(item);

    const fresh = await schedulerProcess(store, keyFile);
    for (const service of [first, fresh]) {
      // The earlier tokens no longer verify: neither the management token nor the client's.
      expect((await service.call('GET', '/v1/acl/token/self', management)).status).toBe(403);
      expect((await service.call('GET', '/v1/acl/token/self', client.SecretID)).status).toBe(403);
      // The new management token sees none of the earlier ACL state.
      const policies = await service.call('GET', '/v1/acl/policies', stolen);
      expect(policies.status).toBe(200);
      expect(policies.body.map((entry: { Name: string }) => entry.Name)).not.toContain('readjobs');
      const tokens = await service.call('GET', '/v1/acl/tokens', stolen);
      expect(tokens.status).toBe(200);
      expect(tokens.body.map((entry: { AccessorID: string }) => entry.AccessorID)).not.toContain(client.AccessorID);
    }
  });
});
