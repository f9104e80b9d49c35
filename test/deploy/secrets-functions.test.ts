import { generateKeyPairSync } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { allSecretsFamilies, backendsOf, type SecretsFamily } from '../../packages/core/src/secrets/families.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { mountsToEnable } from '../support/secrets-routes.ts';
import {
  type Answer,
  comparable,
  deployedEnvironment,
  httpApiEvent,
  invoke,
  secretsFunction,
} from './lambda-events.ts';

type Handler = unknown;

/**
 * Each secrets Lambda in `functions/secrets/`, invoked with the API Gateway v2 event its route delivers, against
 * DynamoDB Local; every answer is compared with what the local server (all families in one app) answers.
 */
describe('functions/secrets/* on API Gateway v2 events', () => {
  let client: DynamoDBClient;
  let local: ReturnType<typeof createSecretsApp>;
  let localCore: Awaited<ReturnType<typeof createCore>>;
  let handlers: Record<SecretsFamily, Handler>;
  let root: string;

  const viaLambda = (handler: Handler, method: string, url: string, body?: unknown, token = root) =>
    invoke(handler, httpApiEvent(method, url, { headers: token ? { 'x-secrets-token': token } : {}, body }));
  const viaLocal = async (method: string, url: string, body?: unknown, token = root): Promise<Answer> => {
    const response = await local.request(url, {
      method,
      headers: {
        ...(token ? { 'X-Secrets-Token': token } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  const expectSameAsLocal = async (handler: Handler, method: string, url: string) => {
    const lambda = await viaLambda(handler, method, url);
    expect(comparable(lambda)).toEqual(comparable(await viaLocal(method, url)));
    return lambda;
  };

  beforeAll(async () => {
    const env = await deployedEnvironment();
    client = env.client;
    const core = await createCore({
      dynamodb: env.client,
      tableName: env.tableName,
      keySource: fileKeySource(env.keyFile),
      backends: backendsOf(allSecretsFamilies),
      log: silentLogger,
      cacheSeconds: 0,
    });
    localCore = core;
    local = createSecretsApp({ core: async () => core, clientIp: () => '198.51.100.7' });
    handlers = Object.fromEntries(
      await Promise.all(allSecretsFamilies.map(async (family) => [family, await secretsFunction(family)] as const)),
    ) as Record<SecretsFamily, Handler>;
  });
  afterAll(() => client?.destroy());

  it('system: sys/init through the Lambda hands out the first root token once', async () => {
    const init = await viaLambda(handlers.system, 'PUT', '/v1/sys/init', {}, '');
    expect(init.status).toBe(200);
    root = init.body.root_token;
    expect(root).toEqual(expect.any(String));
    // The stage's declared mounts, enabled by the all-families core once the service is initialised (what is signed
    // before binds no initialisation's epoch, so it would not verify after) and before any engine Lambda reads the
    // mount table (a Lambda trusts its cached mount table for a few seconds; the system Lambda's was dropped when it
    // initialised); the system Lambda bundles no engine type.
    await localCore.store.settleEpoch();
    for (const { table, path, type } of mountsToEnable(backendsOf(allSecretsFamilies)))
      await localCore.mounts.enable(table, path, { type });
    expect((await viaLambda(handlers.system, 'PUT', '/v1/sys/init', {}, '')).status).toBe(400);
    await expectSameAsLocal(handlers.system, 'GET', '/v1/sys/init');
  });

  it('system: sys/* and auth/token/* answer as the local server does', async () => {
    const mounts = await expectSameAsLocal(handlers.system, 'GET', '/v1/sys/mounts');
    expect(Object.keys(mounts.body.data)).toEqual(
      expect.arrayContaining(['secret/', 'cloud/', 'ldap/', 'mesh/', 'sys/']),
    );
    await expectSameAsLocal(handlers.system, 'GET', '/v1/sys/auth');
    await expectSameAsLocal(handlers.system, 'GET', '/v1/sys/policies/acl?list=true');

    const created = await viaLambda(handlers.system, 'POST', '/v1/auth/token/create', {
      policies: ['default'],
      ttl: '1h',
    });
    expect(created.status).toBe(200);
    const child = created.body.auth.client_token as string;
    const self = await viaLambda(handlers.system, 'GET', '/v1/auth/token/lookup-self', undefined, child);
    expect(self.status).toBe(200);
    expect(self.body.data).toMatchObject({ policies: ['default'] });
    expect((await viaLocal('GET', '/v1/auth/token/lookup-self', undefined, child)).body.data.accessor).toBe(
      self.body.data.accessor,
    );
  });

  it('kv: writes through the Lambda are read back the same from the Lambda and from the local server, GET ?list=true included', async () => {
    expect((await viaLambda(handlers.kv, 'POST', '/v1/secret/app/db', { password: 'pw1' })).status).toBe(204);
    const read = await expectSameAsLocal(handlers.kv, 'GET', '/v1/secret/app/db');
    expect(read.body.data).toEqual({ password: 'pw1' });
    const list = await expectSameAsLocal(handlers.kv, 'GET', '/v1/secret/app?list=true');
    expect(list.body.data.keys).toEqual(['db']);
  });

  it('jwt: configures the auth mount and its roles through the Lambda', async () => {
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(
      (await viaLambda(handlers.jwt, 'POST', '/v1/auth/jwt/config', { jwt_validation_pubkeys: [pem] })).status,
    ).toBe(204);
    const role = await viaLambda(handlers.jwt, 'POST', '/v1/auth/jwt/role/dev', {
      role_type: 'jwt',
      user_claim: 'sub',
      bound_audiences: ['keyhaven'],
      token_policies: ['default'],
    });
    expect(role.status).toBe(204);
    const list = await expectSameAsLocal(handlers.jwt, 'GET', '/v1/auth/jwt/role?list=true');
    expect(list.body.data.keys).toEqual(['dev']);
    await expectSameAsLocal(handlers.jwt, 'GET', '/v1/auth/jwt/config');
    // A login with a token that is not a JWT is refused the same way by both.
    const login = await expectSameAsLocal(handlers.jwt, 'POST', '/v1/auth/jwt/login');
    expect(login.status).toBe(400);
  });

  it('ldap, mesh, cloud: each engine Lambda serves its own mount as the local server does', async () => {
    await expectSameAsLocal(handlers.ldap, 'GET', '/v1/ldap/config');
    await expectSameAsLocal(handlers.ldap, 'GET', '/v1/ldap/role?list=true');
    await expectSameAsLocal(handlers.mesh, 'GET', '/v1/mesh/config/access');
    await expectSameAsLocal(handlers.mesh, 'GET', '/v1/mesh/roles?list=true');
    await expectSameAsLocal(handlers.cloud, 'GET', '/v1/cloud/config');
    await expectSameAsLocal(handlers.cloud, 'GET', '/v1/cloud/roleset?list=true');
  });

  it('a family Lambda bundles only its family: the kv Lambda does not serve the ldap mount', async () => {
    const local = await viaLocal('GET', '/v1/ldap/role?list=true');
    const viaKv = await viaLambda(handlers.kv, 'GET', '/v1/ldap/role?list=true');
    expect(viaKv.status).not.toBe(200);
    expect(comparable(viaKv)).not.toEqual(comparable(local));
  });
});
