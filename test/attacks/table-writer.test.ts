/**
 * Attacker: a table writer — anyone who can write the DynamoDB table directly (a compromised engine function, the
 * local DynamoDB port, a leaked AWS credential with PutItem/UpdateItem), bypassing both services.
 * They try: to grant themselves root or management by editing one attribute of stored security state (a token's
 * policies or type, a policy's rules, a mount entry, a JWT role's token_policies), or by copying a root token's item
 * onto the key of a token they hold.
 * They must never reach: a request answered with more than the token was granted. Every forged, moved or MAC-less
 * item is refused (the request answers 403/404/400, never 2xx on what it could not do before, never 500) and an
 * error naming the item's key (never its content) is logged. Vault's model: storage is untrusted behind the barrier.
 */
import { DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogFields, Logger } from '../../packages/core/src/lib/log.ts';
import { parsePolicyDocument } from '../../packages/core/src/secrets/policies/policy-document.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

/** A logger that keeps error lines, to check the refusal is logged by key and nothing of the content leaks. */
function recordingLogger() {
  const errors: Array<{ message: string; fields: LogFields }> = [];
  const log: Logger = {
    info() {},
    error: (message, fields = {}) => errors.push({ message, fields }),
  };
  return { log, errors };
}

const everything = 'path "*" { capabilities = ["sudo", "create", "read", "update", "delete", "list"] }';
const narrowText = 'path "secret/app/*" { capabilities = ["read"] }';

describe('table writer against the secrets service: forged security items are refused, never granted', () => {
  let h: SecretsHarness;
  let doc: DynamoDBDocumentClient;
  const recorded = recordingLogger();
  const root = (method: string, path: string, body?: unknown) =>
    h.call(method, path, {
      token: h.rootToken,
      ...(body === undefined ? {} : { body }),
    });
  const get = async (pk: string, sk: string) =>
    (await doc.send(new GetCommand({ TableName: h.tableName, Key: { pk, sk } }))).Item;
  const put = (item: Record<string, unknown>) => doc.send(new PutCommand({ TableName: h.tableName, Item: item }));
  /** The attacker finds a token's item through its accessor's item, as a table reader can. */
  const tokenKeyOf = async (accessor: string) => ({
    pk: `token#${(await get(`accessor#${accessor}`, 'accessor'))?.tokenHash as string}`,
    sk: 'token',
  });
  const narrowToken = async () => {
    const created = await root('POST', '/v1/auth/token/create', {
      policies: ['narrow'],
    });
    expect(created.status).toBe(200);
    return created.body.auth as { client_token: string; accessor: string };
  };
  /** Past every process cache (mount table, compiled policies, JWT roles): what is served is read from the table again. */
  const pastCaches = () => h.clock.advance(10_000);
  const refusalsOf = (pk: string, sk: string) =>
    recorded.errors.filter((line) => line.fields.pk === pk && line.fields.sk === sk);

  beforeAll(async () => {
    h = await startSecrets({ log: recorded.log });
    doc = DynamoDBDocumentClient.from(h.client);
    expect(
      (
        await root('POST', '/v1/sys/policies/acl/narrow', {
          policy: narrowText,
        })
      ).status,
    ).toBe(204);
    expect((await root('POST', '/v1/secret/app/one', { data: { v: 'app' } })).status).toBe(204);
    expect((await root('POST', '/v1/secret/top', { data: { v: 'top secret' } })).status).toBe(204);
  });
  afterAll(async () => h.close());

  it('unforged items still work: the narrow token reads what its policy grants and nothing else', async () => {
    const { client_token } = await narrowToken();
    expect((await h.call('GET', '/v1/secret/app/one', { token: client_token })).status).toBe(200);
    expect((await h.call('GET', '/v1/secret/top', { token: client_token })).status).toBe(403);
    expect(recorded.errors).toEqual([]);
  });

  it("editing a token entry's policies to add root: the token is refused, logged by its key", async () => {
    const { client_token, accessor } = await narrowToken();
    const key = await tokenKeyOf(accessor);
    await doc.send(
      new UpdateCommand({
        TableName: h.tableName,
        Key: key,
        UpdateExpression: 'SET policies = :p',
        ExpressionAttributeValues: { ':p': ['default', 'narrow', 'root'] },
      }),
    );
    const read = await h.call('GET', '/v1/secret/top', { token: client_token });
    expect(read.status).toBe(403);
    expect(JSON.stringify(read.body)).not.toContain('top secret');
    expect((await h.call('GET', '/v1/sys/mounts', { token: client_token })).status).toBe(403);
    expect(
      (
        await h.call('GET', '/v1/auth/token/lookup-self', {
          token: client_token,
        })
      ).status,
    ).toBe(403);
    const refusals = refusalsOf(key.pk, key.sk);
    expect(refusals.length).toBeGreaterThan(0);
    expect(refusals[0]?.fields).toMatchObject({
      kind: 'token',
      mac: 'mismatch',
    });
    expect(JSON.stringify(refusals)).not.toContain('root');
  });

  for (const [where, path] of [
    ['as an attribute of its own', '#p'],
    ['inside a map attribute (meta)', 'meta.#p'],
  ] as const) {
    it(`adding a map named __proto__ to a token entry, ${where}: refused like any added attribute`, async () => {
      // Read back, such a map becomes the item's (or the map's) prototype: in no key list, yet it answers for every
      // attribute the entry lacks. The MAC must not be blind to it.
      const { client_token, accessor } = await narrowToken();
      expect((await h.call('GET', '/v1/secret/app/one', { token: client_token })).status).toBe(200);
      const key = await tokenKeyOf(accessor);
      await doc.send(
        new UpdateCommand({
          TableName: h.tableName,
          Key: key,
          UpdateExpression: `SET ${path} = :v`,
          ExpressionAttributeNames: { '#p': '__proto__' },
          ExpressionAttributeValues: { ':v': { explicitMaxTtl: 0, boundCidrs: [], revoking: false } },
        }),
      );
      const after = await h.call('GET', '/v1/secret/app/one', { token: client_token });
      expect(after.status, JSON.stringify(recorded.errors.slice(-2))).toBe(403);
      expect((await h.call('GET', '/v1/auth/token/lookup-self', { token: client_token })).status).toBe(403);
      expect(refusalsOf(key.pk, key.sk)[0]?.fields).toMatchObject({ kind: 'token', mac: 'mismatch' });
    });
  }

  it("copying the root token's item onto another token's key: the copy is refused, the root token still works", async () => {
    const { client_token, accessor } = await narrowToken();
    const victim = await tokenKeyOf(accessor);
    const rootLookup = await root('GET', '/v1/auth/token/lookup-self');
    const rootKey = await tokenKeyOf(rootLookup.body.data.accessor as string);
    const rootItem = await get(rootKey.pk, rootKey.sk);
    expect(rootItem?.policies).toEqual(['root']);
    await put({ ...rootItem, pk: victim.pk, sk: victim.sk });
    expect((await h.call('GET', '/v1/secret/top', { token: client_token })).status).toBe(403);
    expect((await h.call('GET', '/v1/sys/mounts', { token: client_token })).status).toBe(403);
    expect(refusalsOf(victim.pk, victim.sk).length).toBeGreaterThan(0);
    expect((await root('GET', '/v1/secret/top')).status).toBe(200);
  });

  it('an item without a MAC (forged from scratch, or written before item MACs) is refused', async () => {
    const { client_token, accessor } = await narrowToken();
    const key = await tokenKeyOf(accessor);
    const { mac: _mac, ...withoutMac } = (await get(key.pk, key.sk)) ?? {};
    await put({ ...withoutMac, policies: ['root'] });
    expect((await h.call('GET', '/v1/secret/top', { token: client_token })).status).toBe(403);
    expect(refusalsOf(key.pk, key.sk)[0]?.fields).toMatchObject({
      mac: 'missing',
    });
  });

  it('swapping a policy\'s rules for path "*" with every capability: the policy reads as absent, nothing more is granted', async () => {
    expect(
      (
        await root('POST', '/v1/sys/policies/acl/swapped', {
          policy: narrowText,
        })
      ).status,
    ).toBe(204);
    const created = await root('POST', '/v1/auth/token/create', {
      policies: ['swapped'],
    });
    const token = created.body.auth.client_token as string;
    expect((await h.call('GET', '/v1/secret/app/one', { token })).status).toBe(200);
    const item = await get('policies', 'acl/swapped');
    await put({
      ...item,
      text: everything,
      rules: parsePolicyDocument(everything),
    });
    pastCaches();
    expect((await h.call('GET', '/v1/secret/top', { token })).status).toBe(403);
    expect(
      (
        await h.call('POST', '/v1/sys/policies/acl/mine', {
          token,
          body: { policy: everything },
        })
      ).status,
    ).toBe(403);
    expect((await root('GET', '/v1/sys/policies/acl/mine')).status).toBe(404);
    expect((await root('GET', '/v1/sys/policies/acl/swapped')).status).toBe(404);
    expect(refusalsOf('policies', 'acl/swapped').length).toBeGreaterThan(0);
  });

  it("editing a mount entry's type and options: the forged mount is out of the table, not served as the attacker wrote it", async () => {
    expect(
      (
        await root('POST', '/v1/sys/mounts/victim', {
          type: 'kv',
          options: { version: '2' },
        })
      ).status,
    ).toBe(204);
    expect((await root('POST', '/v1/victim/data/x', { data: { v: 1 } })).status).toBe(200);
    const item = await get('mounts', 'victim/');
    const entry = item?.entry as Record<string, unknown>;
    await put({
      ...item,
      entry: {
        ...entry,
        type: 'cloud',
        options: {
          ...(entry.options as object),
          iam_endpoint: 'http://attacker.invalid',
        },
      },
    });
    pastCaches();
    const mounts = await root('GET', '/v1/sys/mounts');
    expect(mounts.status).toBe(200);
    expect(mounts.body.data['victim/']).toBeUndefined();
    const served = await root('GET', '/v1/victim/data/x');
    expect(served.status).toBeGreaterThanOrEqual(400);
    expect(served.status).toBeLessThan(500);
    expect(refusalsOf('mounts', 'victim/').length).toBeGreaterThan(0);
  });

  it("editing a JWT role's token_policies: the role is not found, the login mints nothing", async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    expect((await root('POST', '/v1/sys/auth/jwt', { type: 'jwt' })).status).toBe(204);
    expect(
      (
        await root('POST', '/v1/auth/jwt/config', {
          jwt_validation_pubkeys: [await exportSPKI(publicKey)],
        })
      ).status,
    ).toBe(204);
    const role = {
      role_type: 'jwt',
      user_claim: 'sub',
      bound_audiences: ['keyhaven'],
      token_policies: ['narrow'],
    };
    expect((await root('POST', '/v1/auth/jwt/role/app', role)).status).toBe(204);
    const jwt = () =>
      new SignJWT({ sub: 'alice', aud: 'keyhaven' })
        .setProtectedHeader({ alg: 'ES256' })
        .setIssuedAt(Math.floor(h.clock.now() / 1000))
        .setExpirationTime(Math.floor(h.clock.now() / 1000) + 300)
        .sign(privateKey);
    const login = await h.call('POST', '/v1/auth/jwt/login', {
      body: { role: 'app', jwt: await jwt() },
    });
    expect(login.status).toBe(200);
    expect(login.body.auth.policies).toEqual(['default', 'narrow']);

    const mount = (await get('mounts', 'auth/jwt/'))?.entry as { uuid: string };
    const roleItem = await get(`mount#${mount.uuid}`, 'role/app');
    await put({
      ...roleItem,
      value: {
        ...(roleItem?.value as object),
        token_policies: ['narrow', 'admin'],
      },
    });
    pastCaches();
    const forged = await h.call('POST', '/v1/auth/jwt/login', {
      body: { role: 'app', jwt: await jwt() },
    });
    expect(forged.status).toBe(400);
    expect(forged.body.auth).toBeUndefined();
    expect(refusalsOf(`mount#${mount.uuid}`, 'role/app')[0]?.fields).toMatchObject({ kind: 'mount-value' });
  });
});

describe('table writer against the scheduler: forged ACL items are refused, never granted', () => {
  let h: SchedulerHarness;
  let doc: DynamoDBDocumentClient;
  let management: string;
  const recorded = recordingLogger();
  const mgmt = (method: string, path: string, body?: unknown) =>
    h.call(method, path, {
      token: management,
      ...(body === undefined ? {} : { body }),
    });
  const get = async (pk: string, sk: string) =>
    (await doc.send(new GetCommand({ TableName: h.tableName, Key: { pk, sk } }))).Item;
  const put = (item: Record<string, unknown>) => doc.send(new PutCommand({ TableName: h.tableName, Item: item }));
  const refusalsOf = (pk: string, sk: string) =>
    recorded.errors.filter((line) => line.fields.pk === pk && line.fields.sk === sk);

  beforeAll(async () => {
    h = await startScheduler();
    // The harness's core logs nowhere; the test watches the same store's refusals through a recording logger.
    h.core.store.authenticateWith(h.core.keyring, recorded.log);
    doc = DynamoDBDocumentClient.from(h.client);
    management = await h.bootstrap();
    expect(
      (
        await mgmt('POST', '/v1/acl/policy/reader', {
          Name: 'reader',
          Rules: 'namespace "default" { policy = "read" }',
        })
      ).status,
    ).toBe(200);
  });
  afterAll(async () => h.close());

  it("editing an ACL token's Type to management: the token is refused (403), logged by its key", async () => {
    const token = (
      await mgmt('POST', '/v1/acl/token', {
        Type: 'client',
        Policies: ['reader'],
      })
    ).body as { SecretID: string; AccessorID: string };
    expect((await h.call('GET', '/v1/acl/token/self', { token: token.SecretID })).status).toBe(200);
    expect((await h.call('GET', '/v1/acl/tokens', { token: token.SecretID })).status).toBe(403);
    await doc.send(
      new UpdateCommand({
        TableName: h.tableName,
        Key: { pk: 'sched#token', sk: token.AccessorID },
        UpdateExpression: 'SET #t = :m',
        ExpressionAttributeNames: { '#t': 'Type' },
        ExpressionAttributeValues: { ':m': 'management' },
      }),
    );
    expect((await h.call('GET', '/v1/acl/tokens', { token: token.SecretID })).status).toBe(403);
    expect(
      (
        await h.call('POST', '/v1/acl/policy/mine', {
          token: token.SecretID,
          body: { Name: 'mine', Rules: 'namespace "*" { policy = "write" }' },
        })
      ).status,
    ).toBe(403);
    expect((await h.call('GET', '/v1/acl/token/self', { token: token.SecretID })).status).toBe(403);
    expect(refusalsOf('sched#token', token.AccessorID)[0]?.fields).toMatchObject({
      kind: 'scheduler-acl-token',
      mac: 'mismatch',
    });
    // Nor does the forged token show up as a management token to the real management token.
    const listed = (await mgmt('GET', '/v1/acl/tokens')).body as Array<{
      AccessorID: string;
    }>;
    expect(listed.map((entry) => entry.AccessorID)).not.toContain(token.AccessorID);
  });

  it("copying the management token's item onto a client token's accessor: refused", async () => {
    const token = (
      await mgmt('POST', '/v1/acl/token', {
        Type: 'client',
        Policies: ['reader'],
      })
    ).body as { SecretID: string; AccessorID: string };
    const self = (await mgmt('GET', '/v1/acl/token/self')).body as {
      AccessorID: string;
    };
    const managementItem = await get('sched#token', self.AccessorID);
    const victim = await get('sched#token', token.AccessorID);
    // The copy keeps the victim's secret hash, so the secret still leads to it: only the MAC tells it is not genuine.
    await put({
      ...managementItem,
      sk: token.AccessorID,
      AccessorID: token.AccessorID,
      SecretHash: victim?.SecretHash,
    });
    expect((await h.call('GET', '/v1/acl/tokens', { token: token.SecretID })).status).toBe(403);
    expect(refusalsOf('sched#token', token.AccessorID).length).toBeGreaterThan(0);
    expect((await mgmt('GET', '/v1/acl/tokens')).status).toBe(200);
  });

  it("swapping a policy's rules: the policy no longer exists for anyone, and grants nothing", async () => {
    expect(
      (
        await mgmt('POST', '/v1/acl/policy/swapped', {
          Name: 'swapped',
          Rules: 'namespace "default" { policy = "read" }',
        })
      ).status,
    ).toBe(200);
    const token = (
      await mgmt('POST', '/v1/acl/token', {
        Type: 'client',
        Policies: ['swapped'],
      })
    ).body as { SecretID: string };
    const item = await get('sched#policy', 'swapped');
    await put({
      ...item,
      Rules: 'namespace "*" { policy = "write" }\noperator { policy = "write" }\nnode { policy = "write" }',
    });
    expect((await mgmt('GET', '/v1/acl/policy/swapped')).status).toBe(404);
    const policies = (await mgmt('GET', '/v1/acl/policies')).body as Array<{
      Name: string;
    }>;
    expect(policies.map((policy) => policy.Name)).not.toContain('swapped');
    const caller = await h.scheduler.resolve(token.SecretID);
    expect(caller.management).toBe(false);
    expect(caller.acl).toEqual((await h.scheduler.resolve(undefined)).acl);
    expect(refusalsOf('sched#policy', 'swapped').length).toBeGreaterThan(0);
  });
  it("editing a node pool's NodeIdentityTTL, forging a namespace: neither is served as written", async () => {
    expect((await mgmt('PUT', '/v1/node/pools', { Name: 'fleet', NodeIdentityTTL: '1h' })).status).toBe(200);
    const item = await get('sched#node-pool', 'fleet');
    // A 100-day node identity for every node of the pool, were the edit believed.
    await put({ ...item, NodeIdentityTTL: 100 * 24 * 3600 * 1e9 });
    expect((await mgmt('GET', '/v1/node/pool/fleet')).status).toBe(404);
    expect(await h.scheduler.nodePools.nodeIdentityTtl('fleet')).toBeUndefined();
    const pools = (await mgmt('GET', '/v1/node/pools')).body as Array<{ Name: string }>;
    expect(pools.map((pool) => pool.Name)).not.toContain('fleet');
    expect(refusalsOf('sched#node-pool', 'fleet')[0]?.fields).toMatchObject({ kind: 'scheduler-node-pool' });

    await put({ pk: 'sched#namespace', sk: 'forged', Name: 'forged', Description: '', CreateIndex: 1, ModifyIndex: 1 });
    expect((await mgmt('GET', '/v1/namespace/forged')).status).toBe(404);
    const namespaces = (await mgmt('GET', '/v1/namespaces')).body as Array<{ Name: string }>;
    expect(namespaces.map((namespace) => namespace.Name)).toEqual(['default']);
  });
});
