import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaHandler } from '../../packages/core/src/http/lambda-handler.ts';
import { secretsFront } from '../../packages/core/src/http/secrets-front.ts';
import { secretsLambda } from '../../packages/core/src/http/secrets-lambda.ts';
import { secretsNodeListener } from '../../packages/core/src/http/secrets-node.ts';
import { schedulerFront } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';
import { viaLambda } from './lambda-event.ts';
import { spellings } from './spellings.ts';

/**
 * Issue 23 §1, "the path the policy checks is not the path that is served". Attacker: a narrow token, allowed a
 * wide glob and denied one item inside it. It spells the denied item's path another way — a trailing `/`, `//`,
 * `%2F`/`%2f`, `.`, `..`, `%2e`, a backslash — on every method, and must never get a 2xx on the denied item, nor
 * change it. The same class as HashiCorp's path-normalisation fixes (HCSEC-2025-14, CVE-2025-6000's prefix
 * handling; Vault refuses `..`). Every spelling is sent through the in-process app (web Request), `npm start`'s node
 * listener over a real socket (`secrets-node.ts`: the raw request line) and the Lambda adapter (API Gateway's
 * `rawPath`).
 */

type Answer = { status: number; text: string };
type Transport = (method: string, url: string, token: string, body?: unknown) => Promise<Answer>;

const methods = ['GET', 'PUT', 'POST', 'DELETE', 'LIST'] as const;

describe('attack: one item denied inside an allowed glob, reached by another spelling of its path (secrets service)', () => {
  let h: SecretsHarness;
  let token: string;
  let nodeServer: http.Server;
  const transports: Record<string, Transport> = {};

  const root = (method: string, url: string, body?: unknown) =>
    h.call(method, url, { token: h.rootToken, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startSecrets();
    // The mounts: kv version 1 at kv/, kv version 2 at secret/, an LDAP engine, and a mount to tune.
    expect((await root('POST', '/v1/sys/mounts/kv', { type: 'kv' })).status).toBe(204);
    expect((await root('DELETE', '/v1/sys/mounts/secret')).status).toBe(204);
    expect((await root('POST', '/v1/sys/mounts/secret', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    expect((await root('POST', '/v1/sys/mounts/ldap', { type: 'ldap' })).status).toBe(204);
    expect((await root('POST', '/v1/sys/mounts/cloud', { type: 'kv' })).status).toBe(204);
    expect((await root('PUT', '/v1/kv/app/admin', { password: 'admin-secret' })).status).toBe(204);
    expect((await root('PUT', '/v1/kv/app/public', { greeting: 'hello' })).status).toBe(204);
    expect((await root('PUT', '/v1/secret/data/prod/db', { data: { password: 'prod-secret' } })).status).toBe(200);
    expect(
      (await root('PUT', '/v1/sys/policies/acl/x', { policy: 'path "kv/*" { capabilities = ["read"] }' })).status,
    ).toBe(204);
    const policy = [
      'path "kv/app/*" { capabilities = ["create", "read", "update", "delete", "list"] }',
      'path "kv/app/admin" { capabilities = ["deny"] }',
      'path "secret/data/*" { capabilities = ["create", "read", "update", "delete", "list"] }',
      'path "secret/metadata/*" { capabilities = ["create", "read", "update", "delete", "list"] }',
      'path "secret/data/prod/*" { capabilities = ["deny"] }',
      'path "secret/metadata/prod/*" { capabilities = ["deny"] }',
      'path "ldap/*" { capabilities = ["create", "read", "update", "delete", "list"] }',
      'path "ldap/static-cred/x" { capabilities = ["deny"] }',
      'path "sys/policies/acl/*" { capabilities = ["create", "read", "update", "delete", "list"] }',
      'path "sys/policies/acl/x" { capabilities = ["deny"] }',
      'path "sys/mounts/*" { capabilities = ["create", "read", "update", "delete", "list", "sudo"] }',
      'path "sys/mounts/cloud/tune" { capabilities = ["deny"] }',
    ].join('\n');
    expect((await root('PUT', '/v1/sys/policies/acl/narrow', { policy })).status).toBe(204);
    const created = await root('POST', '/v1/auth/token/create', { policies: ['narrow'], no_default_policy: true });
    token = created.body.auth.client_token;

    transports.app = async (method, url, caller, body) => {
      const out = await h.call(method, url, { token: caller, ...(body === undefined ? {} : { body }) });
      return { status: out.status, text: JSON.stringify(out.body ?? '') };
    };
    transports.lambda = viaLambda(secretsLambda(secretsFront({ core: async () => h.core }), []), 'x-vault-token');
    // `npm start`'s own listener (issue 28): node's request line straight to the front, no web Request between.
    nodeServer = http.createServer(
      secretsNodeListener({ core: async () => h.core, clientIp: () => '127.0.0.1', trustedProxies: [] }),
    );
    await new Promise<void>((resolve) => nodeServer.listen(0, '127.0.0.1', resolve));
    transports.node = viaSocket((nodeServer.address() as AddressInfo).port);
  });
  const viaSocket =
    (port: number): Transport =>
    (method, url, caller, body) =>
      new Promise((resolve, reject) => {
        // Node's HTTP parser knows no LIST: over the socket a list is `GET ?list=true`, as Vault's clients send it.
        const [verb, target] =
          method === 'LIST' ? ['GET', `${url}${url.includes('?') ? '&' : '?'}list=true`] : [method, url];
        const request = http.request(
          {
            host: '127.0.0.1',
            port,
            method: verb,
            path: target,
            headers: { 'x-vault-token': caller, 'content-type': 'application/json' },
          },
          (response) => {
            let text = '';
            response.on('data', (chunk) => {
              text += chunk;
            });
            response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
          },
        );
        request.on('error', reject);
        request.end(body === undefined ? undefined : JSON.stringify(body));
      });
  afterAll(async () => {
    await new Promise((resolve) => nodeServer?.close(resolve));
    await h?.close();
  });

  const cases = [
    {
      name: 'kv v1 kv/app/admin (kv/app/* allowed)',
      path: 'kv/app/admin',
      body: { password: 'overwritten' },
      read: '/v1/kv/app/admin',
    },
    {
      name: 'kv v2 secret/data/prod/db (secret/data/* allowed)',
      path: 'secret/data/prod/db',
      body: { data: { password: 'overwritten' } },
      read: '/v1/secret/data/prod/db',
    },
    { name: 'ldap/static-cred/x (ldap/* allowed)', path: 'ldap/static-cred/x', body: { x: '1' }, read: undefined },
    {
      name: 'sys/policies/acl/x (sys/policies/acl/* allowed)',
      path: 'sys/policies/acl/x',
      body: { policy: 'path "*" { capabilities = ["sudo", "read", "create", "update", "delete", "list"] }' },
      read: '/v1/sys/policies/acl/x',
    },
    {
      name: 'sys/mounts/cloud/tune (sys/mounts/* allowed)',
      path: 'sys/mounts/cloud/tune',
      body: { default_lease_ttl: '1s', max_lease_ttl: '2s' },
      read: '/v1/sys/mounts/cloud/tune',
    },
  ];

  it('the canonical path is denied (the baseline the spellings are held to)', async () => {
    for (const { path } of cases) {
      for (const method of methods)
        expect({ path, method, status: (await transports.app?.(method, `/v1/${path}`, token))?.status }).toEqual({
          path,
          method,
          status:
            method === 'PUT' || method === 'POST' || method === 'DELETE' || method === 'LIST'
              ? expect.toBeOneOf([403, 405])
              : 403,
        });
    }
    // The glob itself works: the narrow token reads what it is allowed.
    expect((await h.call('GET', '/v1/kv/app/public', { token })).status).toBe(200);
  });

  for (const { name, path, body, read } of cases) {
    it(`${name}: every spelling on every method and adapter is 400 (not canonical), 403 (denied) or 405 (no such operation), never 2xx; the item is unchanged`, async () => {
      const before = read ? (await root('GET', read)).body : undefined;
      const tried: string[] = [];
      for (const [adapter, send] of Object.entries(transports)) {
        for (const url of spellings(path)) {
          for (const method of methods) {
            const out = await send(method, url, token, method === 'PUT' || method === 'POST' ? body : undefined);
            tried.push(`${adapter} ${method} ${url} → ${out.status}`);
            expect({ adapter, method, url, ok: out.status >= 200 && out.status < 300 }).toEqual({
              adapter,
              method,
              url,
              ok: false,
            });
            expect({
              adapter,
              method,
              url,
              status: [400, 403, 405].includes(out.status) ? 'refused' : out.status,
            }).toEqual({ adapter, method, url, status: 'refused' });
            if (out.status === 400)
              expect(String(JSON.parse(out.text).errors)).toMatch(
                /encoded slash|empty segment|"\." or "\.\." segment|backslash/,
              );
          }
        }
      }
      expect(tried.length).toBeGreaterThan(50);
      if (read) expect((await root('GET', read)).body?.data).toEqual(before?.data);
    });
  }

  it('a trailing slash is the same item for policy and storage alike: the Lambda and socket forms answer what the canonical form answers', async () => {
    for (const send of [transports.lambda, transports.node] as Transport[]) {
      expect((await send('GET', '/v1/kv/app/admin/', token)).status).toBe(403);
      expect((await send('GET', '/v1/kv/app/public/', token)).status).toBe(200);
      expect(JSON.parse((await send('GET', '/v1/kv/app/public/', token)).text).data).toEqual({ greeting: 'hello' });
      expect((await send('GET', '/v1/secret/data//prod/db', token)).status).toBe(400);
      expect((await send('GET', '/v1/secret/data/%2Fprod/db', token)).status).toBe(400);
      expect((await send('GET', '/v1/kv/app/zz/../admin', token)).status).toBe(400);
    }
    // LIST keeps its directory meaning: `kv/app` and `kv/app/` are one listing, authorised as `kv/app/`.
    const listed = await h.call('LIST', '/v1/kv/app/', { token });
    expect(listed.status).toBe(200);
    expect((await h.call('LIST', '/v1/kv/app', { token })).body.data).toEqual(listed.body.data);
  });
});

describe("attack: another spelling of a scheduler row's path (scheduler service)", () => {
  let s: SchedulerHarness;
  let management: string;
  let lambda: Transport;

  beforeAll(async () => {
    s = await startScheduler();
    management = await s.bootstrap();
    expect(
      (await s.call('PUT', '/v1/acl/policy/x', { token: management, body: { Rules: 'node { policy = "read" }' } }))
        .status,
    ).toBe(200);
    lambda = viaLambda(
      lambdaHandler(schedulerFront({ core: async () => s.core, heartbeatMs: 200, eventPollMs: 50 }), []),
      'x-nomad-token',
      { host: 'api.example' },
    );
  });
  afterAll(() => s?.close());

  const rows = [
    'acl/policy/x',
    'acl/token/self',
    'acl/policies',
    'acl/roles',
    'acl/auth-methods',
    'acl/binding-rules',
    'agent/health',
  ];

  it('a trailing /, //, %2F, ., .. and a backslash are 400 naming the problem, on the node app and the Lambda adapter, even for a management token; nothing changes', async () => {
    const before = (await s.call('GET', '/v1/acl/policy/x', { token: management })).body;
    for (const row of rows) {
      for (const url of spellings(row)) {
        for (const method of ['GET', 'PUT', 'POST', 'DELETE']) {
          const body =
            method === 'PUT' || method === 'POST' ? { Rules: 'namespace "*" { policy = "write" }' } : undefined;
          // The web Request the app is given has already resolved `.`/`..` (its URL parser does): that form is
          // canonical by then and a management token may use it. Only the Lambda adapter sees it as sent.
          const resolvedByParser = /\/(\.|%2e|zz\/(\.\.|%2e%2e))\//.test(url) && !/\/\/|%2F|%2f|%5C|\/$/.test(url);
          const statuses: Array<[string, number | undefined]> = [];
          if (!resolvedByParser)
            statuses.push([
              'app',
              (await s.call(method, url, { token: management, ...(body ? { body } : {}) })).status,
            ]);
          statuses.push(['lambda', (await lambda(method, url, management, body)).status]);
          for (const [adapter, status] of statuses) {
            expect({ adapter, method, url, status }).toEqual({ adapter, method, url, status: 400 });
          }
        }
      }
    }
    expect((await s.call('GET', '/v1/acl/policy/x', { token: management })).body).toEqual(before);
  });
});
