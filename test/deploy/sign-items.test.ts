/**
 * docs/deployment.md, "Signing a table written before item MACs": a table written before item MACs (issue 23 §7) loses its tokens, policies
 * and mounts, which the service refuses as forged; the operator vouches for the table and signs it with
 * `functions/deploy/sign-items.ts`. Items that carry a wrong MAC (a table writer's forgery, or corruption) are never
 * signed: they stay refused and are reported.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { ManualClock } from '../../packages/core/src/lib/clock.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { createSchedulerApp } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { initialize } from '../../packages/core/src/secrets/sys/init.ts';
import { localClientConfig, startDynamoDbLocal } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const kindNames = [
  'token',
  'acl-policy',
  'mount',
  'mount-value',
  'scheduler-acl-token',
  'scheduler-acl-policy',
  'scheduler-acl-role',
  'scheduler-acl-auth-method',
  'scheduler-acl-binding-rule',
  'audit-device',
  'keyring',
  'init-marker',
  'scheduler-bootstrap-marker',
] as const;
type Counts = { signed: number; alreadySigned: number; refused: number; changed: number };

/** The command's table as the operator reads it, one row per kind. */
function countsOf(stdout: string): Record<string, Counts> {
  const counts: Record<string, Counts> = {};
  for (const name of kindNames) {
    const row = new RegExp(`^${name}\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)$`, 'm').exec(stdout);
    if (!row) throw new Error(`no row for ${name} in:\n${stdout}`);
    const [signed, alreadySigned, refused, changed] = row.slice(1).map(Number) as [number, number, number, number];
    counts[name] = { signed, alreadySigned, refused, changed };
  }
  return counts;
}

describe('signing a table written before item MACs (functions/deploy/sign-items.ts)', () => {
  let h: SecretsHarness;
  let doc: DynamoDBDocumentClient;
  const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-sign-'));
  const keyFile = path.join(keyDir, 'keyring.key');
  const jwtKeys = generateKeyPair('ES256');
  let management = '';
  let narrowToken = '';
  let forgedToken = '';
  let forgedKey = { pk: '', sk: '' };
  let beforeStripping: Record<string, Counts> = {};

  const signItems = async (...args: string[]) => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      KEYHAVEN_DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
      KEYHAVEN_KEY_FILE: keyFile,
    };
    delete env.KEYHAVEN_KMS_KEY_ID;
    const out = await run(
      process.execPath,
      ['--import', 'tsx', 'functions/deploy/sign-items.ts', ...args, h.tableName],
      { cwd: root, env },
    );
    return out.stdout;
  };

  /** A service freshly started on the table as it is now (as a new Lambda or `npm start` would: no cache from before). */
  const serviceNow = async () => {
    const core = await createCore({
      dynamodb: h.client,
      tableName: h.tableName,
      keySource: fileKeySource(keyFile),
      backends: backendsOf(allSecretsFamilies),
      clock: new ManualClock(h.clock.now()),
      log: silentLogger,
    });
    const secrets = createSecretsApp({ core: async () => core, clientIp: () => '127.0.0.1' });
    const scheduler = createSchedulerApp({ core: async () => core, clientIp: () => '127.0.0.1' });
    const json = async (response: Response) => {
      const text = await response.text();
      // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response JSON
      let body: any = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {}
      return { status: response.status, body };
    };
    return {
      call: async (method: string, url: string, token?: string, body?: unknown) =>
        json(
          await secrets.request(url, {
            method,
            headers: { 'Content-Type': 'application/json', ...(token ? { 'X-Secrets-Token': token } : {}) },
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          }),
        ),
      scheduler: async (method: string, url: string, token: string) =>
        json(await scheduler.request(url, { method, headers: { 'X-Scheduler-Token': token } })),
    };
  };

  const jwtLogin = async (service: Awaited<ReturnType<typeof serviceNow>>) => {
    const now = Math.floor(h.clock.now() / 1000);
    const jwt = await new SignJWT({ sub: 'alice', aud: 'keyhaven' })
      .setProtectedHeader({ alg: 'ES256' })
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign((await jwtKeys).privateKey);
    return service.call('POST', '/v1/auth/jwt/login', undefined, { role: 'app', jwt });
  };

  beforeAll(async () => {
    h = await startSecrets({ keySource: fileKeySource(keyFile) });
    doc = DynamoDBDocumentClient.from(h.client);
    const asRoot = async (method: string, url: string, body?: unknown) => {
      const out = await h.call(method, url, { token: h.rootToken, ...(body === undefined ? {} : { body }) });
      if (out.status >= 300) throw new Error(`${method} ${url}: ${out.status} ${JSON.stringify(out.body)}`);
      return out.body;
    };
    await asRoot('POST', '/v1/sys/policies/acl/narrow', { policy: 'path "secret/app/*" { capabilities = ["read"] }' });
    await asRoot('POST', '/v1/secret/app/one', { v: 'app' });
    await asRoot('POST', '/v1/secret/top', { v: 'top secret' });
    await asRoot('POST', '/v1/sys/mounts/extra', { type: 'kv' });
    await asRoot('POST', '/v1/extra/x', { v: 'extra' });
    await asRoot('POST', '/v1/auth/token/roles/app', { allowed_policies: ['narrow'] });
    await asRoot('POST', '/v1/sys/auth/jwt', { type: 'jwt' });
    await asRoot('POST', '/v1/auth/jwt/config', {
      jwt_validation_pubkeys: [await exportSPKI((await jwtKeys).publicKey)],
    });
    await asRoot('POST', '/v1/auth/jwt/role/app', {
      role_type: 'jwt',
      user_claim: 'sub',
      bound_audiences: ['keyhaven'],
      token_policies: ['narrow'],
    });
    // A token with a TTL and a use count: the bookkeeping its kind leaves outside the MAC is on the item.
    narrowToken = (await asRoot('POST', '/v1/auth/token/create', { policies: ['narrow'], ttl: '1h', num_uses: 5 })).auth
      .client_token;
    const forged = (await asRoot('POST', '/v1/auth/token/create', { policies: ['narrow'] })).auth;
    forgedToken = forged.client_token;
    const accessorItem = (
      await doc.send(
        new GetCommand({ TableName: h.tableName, Key: { pk: `accessor#${forged.accessor}`, sk: 'accessor' } }),
      )
    ).Item;
    forgedKey = { pk: `token#${accessorItem?.tokenHash as string}`, sk: 'token' };

    const scheduler = createSchedulerApp({ core: async () => h.core, clientIp: () => '127.0.0.1' });
    const nomad = async (method: string, url: string, body?: unknown) => {
      const response = await scheduler.request(url, {
        method,
        headers: { 'Content-Type': 'application/json', ...(management ? { 'X-Scheduler-Token': management } : {}) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`${method} ${url}: ${response.status} ${text}`);
      return text ? JSON.parse(text) : undefined;
    };
    management = (await nomad('POST', '/v1/acl/bootstrap')).SecretID;
    await nomad('POST', '/v1/acl/policy/jobs', { Rules: 'namespace "default" { policy = "read" }' });
    await nomad('POST', '/v1/acl/role', { Name: 'team-eng', Policies: [{ Name: 'jobs' }] });
    await nomad('POST', '/v1/acl/auth-method', {
      Name: 'corp',
      Type: 'JWT',
      TokenLocality: 'local',
      MaxTokenTTL: '1h',
      Config: { JWKSURL: 'http://127.0.0.1:1/jwks', BoundAudiences: ['nomad'] },
    });
    await nomad('POST', '/v1/acl/binding-rule', {
      AuthMethod: 'corp',
      BindType: 'role',
      BindName: 'team-eng',
      Selector: '',
    });
  });
  afterAll(async () => {
    await h?.close();
    rmSync(keyDir, { recursive: true, force: true });
  });

  it('on a table the service wrote, every security item of every kind already verifies: nothing to sign, nothing refused', async () => {
    beforeStripping = countsOf(await signItems('--dry-run'));
    for (const name of kindNames) {
      expect(beforeStripping[name], name).toMatchObject({ signed: 0, refused: 0, changed: 0 });
      expect(beforeStripping[name]?.alreadySigned, name).toBeGreaterThan(0);
    }
    // Root, the narrow token and the one about to be forged; the builtin token store's role; the JWT config and role.
    expect(beforeStripping.token?.alreadySigned).toBe(3);
    expect(beforeStripping['mount-value']?.alreadySigned).toBe(3);
  });

  it('an old table: without MACs the root token is refused (403); the command signs it back, a forged item stays refused and is reported', async () => {
    // A table writer forged the second token to root before the upgrade: its MAC no longer matches.
    await doc.send(
      new UpdateCommand({
        TableName: h.tableName,
        Key: forgedKey,
        UpdateExpression: 'SET policies = :root',
        ExpressionAttributeValues: { ':root': ['root'] },
      }),
    );
    // The table as a release before item MACs left it: no item carries `mac` (the forged one aside).
    const items = (await doc.send(new ScanCommand({ TableName: h.tableName, ConsistentRead: true }))).Items ?? [];
    let stripped = 0;
    for (const item of items) {
      if (item.mac === undefined || (item.pk === forgedKey.pk && item.sk === forgedKey.sk)) continue;
      await doc.send(
        new UpdateCommand({
          TableName: h.tableName,
          Key: { pk: item.pk, sk: item.sk },
          UpdateExpression: 'REMOVE mac',
        }),
      );
      stripped++;
    }
    expect(stripped).toBe(kindNames.reduce((sum, name) => sum + (beforeStripping[name]?.alreadySigned ?? 0), 0) - 1);

    const old = await serviceNow();
    expect((await old.call('GET', '/v1/auth/token/lookup-self', h.rootToken)).status).toBe(403);
    expect((await old.call('GET', '/v1/auth/token/lookup-self', narrowToken)).status).toBe(403);
    expect((await old.call('GET', '/v1/sys/mounts', h.rootToken)).status).toBe(403);
    expect((await old.scheduler('GET', '/v1/acl/policies', management)).status).toBe(403);

    const dryRun = await signItems('--dry-run');
    expect(dryRun).toContain('dry run: nothing written');
    const wouldSign = countsOf(dryRun);
    expect(wouldSign.token).toMatchObject({ signed: 2, refused: 1 });
    const stillBare = (await doc.send(new GetCommand({ TableName: h.tableName, Key: { pk: 'mounts', sk: 'extra/' } })))
      .Item;
    expect(stillBare?.mac).toBeUndefined();

    const out = await signItems();
    const signed = countsOf(out);
    for (const name of kindNames) {
      const expected = (beforeStripping[name]?.alreadySigned ?? 0) - (name === 'token' ? 1 : 0);
      expect(signed[name], name).toEqual({
        signed: expected,
        alreadySigned: 0,
        refused: name === 'token' ? 1 : 0,
        changed: 0,
      });
      expect(wouldSign[name]?.signed, name).toBe(expected);
    }
    expect(out).toContain(`refused: token ${forgedKey.pk} ${forgedKey.sk}: its MAC does not match`);

    const now = await serviceNow();
    expect((await now.call('GET', '/v1/auth/token/lookup-self', h.rootToken)).status).toBe(200);
    expect((await now.call('GET', '/v1/sys/policies/acl/narrow', h.rootToken)).body.data.name).toBe('narrow');
    const mounts = await now.call('GET', '/v1/sys/mounts', h.rootToken);
    expect(Object.keys(mounts.body.data)).toEqual(expect.arrayContaining(['secret/', 'extra/']));
    expect((await now.call('GET', '/v1/extra/x', h.rootToken)).body.data).toEqual({ v: 'extra' });
    // The narrow token: its policy, its use count and TTL as they were.
    expect((await now.call('GET', '/v1/secret/app/one', narrowToken)).body.data).toEqual({ v: 'app' });
    expect((await now.call('GET', '/v1/secret/top', narrowToken)).status).toBe(403);
    const fromRole = await now.call('POST', '/v1/auth/token/create/app', h.rootToken, { policies: ['narrow'] });
    expect(fromRole.status).toBe(200);
    expect(fromRole.body.auth.policies).toEqual(['default', 'narrow']);
    const login = await jwtLogin(now);
    expect(login.status).toBe(200);
    expect(login.body.auth.policies).toEqual(['default', 'narrow']);
    expect((await now.scheduler('GET', '/v1/acl/policy/jobs', management)).status).toBe(200);
    expect((await now.scheduler('GET', '/v1/acl/auth-method/corp', management)).status).toBe(200);
    const roles = await now.scheduler('GET', '/v1/acl/roles', management);
    expect(roles.body.map((role: { Name: string }) => role.Name)).toEqual(['team-eng']);
    expect((await now.scheduler('GET', '/v1/acl/binding-rules', management)).body).toHaveLength(1);

    // The keyring's item was signed with the init marker's time as its stamp: a deleted marker is still caught.
    const keyringItem = (await doc.send(new GetCommand({ TableName: h.tableName, Key: { pk: 'sys', sk: 'keyring' } })))
      .Item;
    const initItem = (await doc.send(new GetCommand({ TableName: h.tableName, Key: { pk: 'sys', sk: 'init' } }))).Item;
    expect(keyringItem?.initializedAt).toBe(initItem?.initializedAt);

    // The forgery was never signed: the forged token grants nothing, not even what it had before.
    expect((await now.call('GET', '/v1/secret/top', forgedToken)).status).toBe(403);
    expect((await now.call('GET', '/v1/auth/token/lookup-self', forgedToken)).status).toBe(403);
  }, 120_000);

  it('a second run signs nothing and still reports the forged item', async () => {
    const again = countsOf(await signItems());
    for (const name of kindNames) {
      expect(again[name]?.signed, name).toBe(0);
      // Tokens: all but the forged one, and the two made since (from the token role and the JWT login).
      expect(again[name]?.alreadySigned, name).toBe(
        (beforeStripping[name]?.alreadySigned ?? 0) + (name === 'token' ? 1 : 0),
      );
    }
    expect(again.token?.refused).toBe(1);
  });

  it('usage: a missing table name is refused with the usage text (exit 2), which says the operator vouches for the table', async () => {
    const refused = await run(process.execPath, ['--import', 'tsx', 'functions/deploy/sign-items.ts'], {
      cwd: root,
    }).catch((error) => error);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('you vouch for what the table holds now');
  });
});

describe('signing an npm start data directory from before item MACs (--data-dir)', () => {
  it('starts DynamoDB Local on the directory under its own access key, signs with its key file, and the root token works again', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-sign-dir-'));
    const keySource = fileKeySource(path.join(dataDir, 'keyring.key'));
    /** The directory's table as `npm start` opens it (packages/local/src/start-local.ts), with npm start stopped around it. */
    const withTable = async <T>(use: (client: DynamoDBClient) => Promise<T>): Promise<T> => {
      const dynamo = await startDynamoDbLocal({ dataDir: path.join(dataDir, 'dynamodb') });
      const client = new DynamoDBClient(localClientConfig(dynamo.endpoint, dynamo.credentials));
      try {
        return await use(client);
      } finally {
        client.destroy();
        await dynamo.stop();
      }
    };
    const coreOn = (client: DynamoDBClient) =>
      createCore({
        dynamodb: client,
        tableName: 'keyhaven',
        keySource,
        backends: backendsOf(allSecretsFamilies),
        log: silentLogger,
      });
    try {
      const rootToken = await withTable(async (client) => {
        await ensureTable(client, 'keyhaven');
        const token = await initialize(await coreOn(client));
        const doc = DynamoDBDocumentClient.from(client);
        for (const item of (await doc.send(new ScanCommand({ TableName: 'keyhaven', ConsistentRead: true }))).Items ??
          []) {
          if (item.mac !== undefined)
            await doc.send(
              new UpdateCommand({
                TableName: 'keyhaven',
                Key: { pk: item.pk, sk: item.sk },
                UpdateExpression: 'REMOVE mac',
              }),
            );
        }
        expect(await (await coreOn(client)).tokens.lookup(token)).toBeUndefined();
        return token;
      });
      const env: NodeJS.ProcessEnv = { ...process.env };
      for (const name of ['KEYHAVEN_TABLE', 'KEYHAVEN_DYNAMODB_ENDPOINT', 'KEYHAVEN_KEY_FILE', 'KEYHAVEN_KMS_KEY_ID'])
        delete env[name];
      const out = await run(
        process.execPath,
        ['--import', 'tsx', 'functions/deploy/sign-items.ts', '--data-dir', dataDir],
        { cwd: root, env },
      );
      expect(out.stdout).toContain('table keyhaven');
      expect(countsOf(out.stdout).token).toEqual({ signed: 1, alreadySigned: 0, refused: 0, changed: 0 });
      await withTable(async (client) => {
        expect((await (await coreOn(client)).tokens.lookup(rootToken))?.policies).toEqual(['root']);
      });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);

  it('a folder that is not a data directory is refused by name, and nothing is created in it', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'keyhaven-sign-empty-'));
    try {
      const refused = await run(
        process.execPath,
        ['--import', 'tsx', 'functions/deploy/sign-items.ts', '--data-dir', empty],
        { cwd: root },
      ).catch((error) => error);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`${path.join(empty, 'keyring.key')} does not exist`);
      expect(readdirSync(empty)).toEqual([]);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
