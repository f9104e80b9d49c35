/**
 * Attacker: a table writer (the local DynamoDB port, a compromised engine function, a leaked credential with
 * PutItem/UpdateItem/DeleteItem), bypassing both services.
 * They try: (1) to turn an audit device into a socket device with `log_raw` pointed at their own listener, so every
 * request's raw token (root's included) and every secret in an answer reaches them in clear text; (2) to re-open
 * initialisation by deleting the init marker `sys/init` (or the scheduler's `sched#meta/bootstrap`), or by giving it
 * an `expiresAt` for the table's TTL, so anonymous `PUT /v1/sys/init` answers a new root token over the existing
 * secrets (and `POST /v1/acl/bootstrap` a new management token).
 * They must never reach: a byte at their listener, a listing that shows their device, a new root or management token.
 * A forged device is never opened (the service fails closed while it is the only one) and is logged by its key; a
 * missing marker beside a table that was initialised is refused loudly (503 naming tampering, and an error log line),
 * never taken as "start over".
 */
import { createServer, type Server } from 'node:net';
import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogFields, Logger } from '../../packages/core/src/lib/log.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

function recordingLogger() {
  const errors: Array<{ message: string; fields: LogFields }> = [];
  const log: Logger = { info() {}, error: (message, fields = {}) => errors.push({ message, fields }) };
  return { log, errors };
}

/** The attacker's listener: every byte any connection sends. */
async function listen(): Promise<{ server: Server; port: number; received: () => string }> {
  let received = '';
  const server = createServer((socket) => socket.on('data', (chunk) => (received += chunk.toString())));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port, received: () => received };
}

describe('table writer against the audit devices', () => {
  let h: SecretsHarness;
  let attacker: Awaited<ReturnType<typeof listen>>;
  const recorded = recordingLogger();
  const raw = async (pk: string, sk: string) => {
    const { Item } = await h.client.send(
      new GetItemCommand({ TableName: h.tableName, Key: marshall({ pk, sk }), ConsistentRead: true }),
    );
    return Item && unmarshall(Item);
  };
  const putRaw = (item: Record<string, unknown>) =>
    h.client.send(new PutItemCommand({ TableName: h.tableName, Item: marshall(item) }));
  const pastCaches = () => h.clock.advance(10_000);

  beforeAll(async () => {
    h = await startSecrets({ log: recorded.log });
    attacker = await listen();
    expect((await h.call('POST', '/v1/secret/app', { token: h.rootToken, body: { password: 'hunter2' } })).status).toBe(
      204,
    );
  });
  afterAll(async () => {
    attacker.server.close();
    await h.close();
  });

  it('a device item rewritten into a log_raw socket to the attacker: nothing reaches them, the service fails closed', async () => {
    const original = await raw('sys', 'audit/harness/');
    expect(original?.type).toBe('file');
    const forged = {
      ...original,
      type: 'socket',
      options: { address: `127.0.0.1:${attacker.port}`, socket_type: 'tcp', log_raw: 'true' },
    };
    await putRaw(forged);
    pastCaches();
    const read = await h.call('GET', '/v1/secret/app', { token: h.rootToken });
    // The only device is the forged one: nothing can record the request, so it is not processed (Vault fails closed).
    expect(read.status).toBe(503);
    expect(JSON.stringify(read.body)).not.toContain('hunter2');
    await new Promise((resolve) => setTimeout(resolve, 200)); // a connection the service opened would have sent by now
    expect(attacker.received()).toBe('');
    expect(
      recorded.errors.some(
        (line) =>
          line.fields.kind === 'audit-device' && line.fields.pk === 'sys' && line.fields.sk === 'audit/harness/',
      ),
    ).toBe(true);
    expect(JSON.stringify(recorded.errors)).not.toContain(String(attacker.port));
    // Put back: the genuine item verifies again and requests are recorded as before.
    await putRaw(original as Record<string, unknown>);
    pastCaches();
    expect((await h.call('GET', '/v1/secret/app', { token: h.rootToken })).status).toBe(200);
  });

  it('a device item added beside the genuine one: never opened, never listed, requests go on through the genuine one', async () => {
    const genuine = (await raw('sys', 'audit/harness/')) as Record<string, unknown>;
    await putRaw({
      ...genuine,
      sk: 'audit/exfil/',
      path: 'exfil/',
      type: 'socket',
      options: { address: `127.0.0.1:${attacker.port}`, socket_type: 'tcp', log_raw: 'true' },
    });
    pastCaches();
    const read = await h.call('GET', '/v1/secret/app', { token: h.rootToken });
    expect(read.status).toBe(200);
    expect(read.body.data.password).toBe('hunter2');
    const listed = await h.call('GET', '/v1/sys/audit', { token: h.rootToken });
    expect(listed.status).toBe(200);
    expect(Object.keys(listed.body.data)).toEqual(['harness/']);
    expect(JSON.stringify(listed.body)).not.toContain('socket');
    // sys/audit-hash has nothing to say for it either (it has no salt we trust).
    const hashed = await h.call('POST', '/v1/sys/audit-hash/exfil', { token: h.rootToken, body: { input: 'x' } });
    expect(hashed.status).not.toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(attacker.received()).toBe('');
    expect(
      recorded.errors.some((line) => line.fields.kind === 'audit-device' && line.fields.sk === 'audit/exfil/'),
    ).toBe(true);
    // The operator removes it through the API.
    expect((await h.call('DELETE', '/v1/sys/audit/exfil', { token: h.rootToken })).status).toBe(204);
    expect(await raw('sys', 'audit/exfil/')).toBeUndefined();
  });

  it('a device enabled through the API carries a MAC and is served: the genuine path is unchanged', async () => {
    const item = await raw('sys', 'audit/harness/');
    expect(item?.mac).toMatch(/^v1:/);
    expect(h.auditLines().length).toBeGreaterThan(0);
  });
});

describe('table writer against password policies', () => {
  let h: SecretsHarness;
  const recorded = recordingLogger();

  beforeAll(async () => {
    h = await startSecrets({ log: recorded.log });
  });
  afterAll(async () => h.close());

  it('a policy weakened to one character from one letter: refused (404, logged by key), never generated from', async () => {
    const strong = 'length = 24\nrule "charset" {\n  charset = "abcdefghijklmnopqrstuvwxyz0123456789"\n}';
    expect(
      (await h.call('POST', '/v1/sys/policies/password/db', { token: h.rootToken, body: { policy: strong } })).status,
    ).toBe(204);
    const { Item } = await h.client.send(
      new GetItemCommand({ TableName: h.tableName, Key: marshall({ pk: 'password-policies', sk: 'db' }) }),
    );
    const genuine = unmarshall(Item ?? {});
    expect(genuine.mac).toMatch(/^v1:/);
    await putRawItem(h, { ...genuine, value: { policy: 'length = 4\nrule "charset" {\n  charset = "a"\n}' } });
    const generated = await h.call('GET', '/v1/sys/policies/password/db/generate', { token: h.rootToken });
    expect(generated.status).toBe(404);
    expect(JSON.stringify(generated.body)).not.toContain('aaaa');
    expect((await h.call('GET', '/v1/sys/policies/password/db', { token: h.rootToken })).status).toBe(404);
    expect(recorded.errors.some((line) => line.fields.kind === 'password-policy' && line.fields.sk === 'db')).toBe(
      true,
    );
    // Put back, it generates again.
    await putRawItem(h, genuine);
    const again = await h.call('GET', '/v1/sys/policies/password/db/generate', { token: h.rootToken });
    expect(again.status).toBe(200);
    expect(again.body.data.password).toHaveLength(24);
  });
});

const putRawItem = (h: SecretsHarness, item: Record<string, unknown>) =>
  h.client.send(new PutItemCommand({ TableName: h.tableName, Item: marshall(item) }));

describe('table writer against the init marker (secrets service)', () => {
  let h: SecretsHarness;
  const recorded = recordingLogger();
  const key = (pk: string, sk: string) => marshall({ pk, sk });
  const tokenItems = async () =>
    (await h.client.send(new ScanCommand({ TableName: h.tableName }))).Items?.map((item) => unmarshall(item)).filter(
      (item) => String(item.pk).startsWith('token#'),
    ).length ?? 0;
  const refusals = () => recorded.errors.filter((line) => /refused to initialise again/.test(line.message));

  beforeAll(async () => {
    h = await startSecrets({ log: recorded.log });
    expect((await h.call('POST', '/v1/secret/app', { token: h.rootToken, body: { password: 'hunter2' } })).status).toBe(
      204,
    );
  });
  afterAll(async () => h.close());

  it('the marker deleted: anonymous PUT sys/init is refused with 503 naming tampering, logged, and mints nothing', async () => {
    const before = await tokenItems();
    await h.client.send(new DeleteItemCommand({ TableName: h.tableName, Key: key('sys', 'init') }));
    const init = await h.call('PUT', '/v1/sys/init', { body: {} });
    expect(init.status).toBe(503);
    expect(init.body.errors[0]).toMatch(/initialisation refused: the init marker is missing/);
    expect(init.body.errors[0]).toMatch(/tampering/);
    expect(JSON.stringify(init.body)).not.toMatch(/root_token/);
    expect(refusals()).toHaveLength(1);
    expect(await tokenItems()).toBe(before);
    // Status reads do not offer the table for initialisation either.
    const status = await h.call('GET', '/v1/sys/init');
    expect(status.body.initialized).toBe(true);
    expect((await h.call('GET', '/v1/sys/health')).body.initialized).toBe(true);
  });

  it("the marker deleted and the keyring's stamp stripped with its MAC: still refused", async () => {
    const before = await tokenItems();
    await h.client.send(
      new UpdateItemCommand({
        TableName: h.tableName,
        Key: key('sys', 'keyring'),
        UpdateExpression: 'REMOVE initializedAt, mac',
      }),
    );
    const init = await h.call('PUT', '/v1/sys/init', { body: {} });
    expect(init.status).toBe(503);
    expect(init.body.errors[0]).toMatch(/keyring's item failed its integrity check/);
    expect(await tokenItems()).toBe(before);
    expect(refusals()).toHaveLength(2);
  });

  it('the marker given an expiresAt (for the TTL to delete it): its MAC fails at once, and a re-init is refused', async () => {
    const fresh = await startSecrets({ log: recorded.log });
    try {
      await fresh.client.send(
        new UpdateItemCommand({
          TableName: fresh.tableName,
          Key: key('sys', 'init'),
          UpdateExpression: 'SET expiresAt = :past',
          ExpressionAttributeValues: marshall({ ':past': 1 }),
        }),
      );
      const init = await fresh.call('PUT', '/v1/sys/init', { body: {} });
      expect(init.status).toBe(400);
      expect(init.body.errors).toEqual(['already initialized']);
      expect(recorded.errors.some((line) => line.fields.kind === 'init-marker' && line.fields.sk === 'init')).toBe(
        true,
      );
      // And when the TTL has deleted it, the keyring's stamp still says it was initialised.
      await fresh.client.send(new DeleteItemCommand({ TableName: fresh.tableName, Key: key('sys', 'init') }));
      const again = await fresh.call('PUT', '/v1/sys/init', { body: {} });
      expect(again.status).toBe(503);
      expect(again.body.errors[0]).toMatch(/the keyring records an initialisation/);
    } finally {
      await fresh.close();
    }
  });

  it('the old root token still reads the secret: the refusals changed nothing', async () => {
    const read = await h.call('GET', '/v1/secret/app', { token: h.rootToken });
    expect(read.status).toBe(200);
    expect(read.body.data.password).toBe('hunter2');
  });
});

describe('table writer against the bootstrap marker (scheduler)', () => {
  let h: SchedulerHarness;
  const recorded = recordingLogger();
  const key = marshall({ pk: 'sched#meta', sk: 'bootstrap' });
  const managementTokens = async () =>
    (await h.client.send(new ScanCommand({ TableName: h.tableName }))).Items?.map((item) => unmarshall(item)).filter(
      (item) => item.pk === 'sched#token' && item.Type === 'management',
    ).length ?? 0;

  beforeAll(async () => {
    h = await startScheduler({ log: recorded.log });
    h.core.store.authenticateWith(h.core.keyring, recorded.log);
    await h.bootstrap();
  });
  afterAll(async () => h.close());

  it('the marker deleted: anonymous POST /v1/acl/bootstrap is refused with 503 naming tampering, logged, mints nothing', async () => {
    expect(await managementTokens()).toBe(1);
    const marker = await h.client.send(new GetItemCommand({ TableName: h.tableName, Key: key, ConsistentRead: true }));
    expect(unmarshall(marker.Item ?? {}).mac).toMatch(/^v1:/);
    await h.client.send(new DeleteItemCommand({ TableName: h.tableName, Key: key }));
    const again = await h.call('POST', '/v1/acl/bootstrap', {
      body: { BootstrapSecret: '2b778dd9-f5f1-6f29-b4b4-9a5fa948757a' },
    });
    expect(again.status).toBe(503);
    expect(again.text).toMatch(/ACL bootstrap refused: the bootstrap marker is missing/);
    expect(again.text).toMatch(/tampering/);
    expect(again.text).not.toContain('2b778dd9');
    expect(recorded.errors.some((line) => /ACL bootstrap marker is missing/.test(line.message))).toBe(true);
    expect(await managementTokens()).toBe(1);
  });

  it('a marker put back without a MAC, or with an expiresAt: a bootstrap is still refused, the forgery logged', async () => {
    await h.client.send(
      new PutItemCommand({
        TableName: h.tableName,
        Item: marshall({ pk: 'sched#meta', sk: 'bootstrap', index: 1, expiresAt: 1 }),
      }),
    );
    const again = await h.call('POST', '/v1/acl/bootstrap');
    expect(again.status).toBe(400);
    expect(again.text).toBe('ACL bootstrap already done (reset index: 0)');
    expect(
      recorded.errors.some(
        (line) => line.fields.kind === 'scheduler-bootstrap-marker' && line.fields.sk === 'bootstrap',
      ),
    ).toBe(true);
    expect(await managementTokens()).toBe(1);
  });
});
