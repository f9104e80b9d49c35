import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsNodeListener } from '../../packages/core/src/http/secrets-node.ts';
import { secretsFront } from '../../packages/core/src/http/secrets-front.ts';
import { secretsLambda } from '../../packages/core/src/http/secrets-lambda.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';
import { gatewayEvent } from './lambda-event.ts';

/**
 * Issue 23 §4 (second bullet): a read's parameter constraints are checked on its query, so a read handler must see
 * nothing but its query. Attacker: a narrow token whose policy allows reading `secret/data/*` only at `version=2`
 * (`allowed_parameters`). It sends `GET` with a JSON body `{"version": 1}` — through the node app and through the
 * Lambda adapter — hoping the handler reads the body and serves version 1. It must get the latest version (the
 * body is dropped at the front), and `?version=1` itself is refused (403). A DELETE, whose input in Vault is its
 * query as well, gets no body either.
 */
describe('attack: a GET with a body, to slip a read parameter past allowed_parameters', () => {
  let h: SecretsHarness;
  let token: string;
  let lambda: ReturnType<typeof secretsLambda>;

  const root = (method: string, url: string, body?: unknown) =>
    h.call(method, url, { token: h.rootToken, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startSecrets();
    expect((await root('POST', '/v1/sys/mounts/kv2', { type: 'kv', options: { version: '2' } })).status).toBe(204);
    expect((await root('PUT', '/v1/kv2/data/app', { data: { secret: 'version-1' } })).status).toBe(200);
    expect((await root('PUT', '/v1/kv2/data/app', { data: { secret: 'version-2' } })).status).toBe(200);
    const policy = 'path "kv2/data/*" {\n  capabilities = ["read"]\n  allowed_parameters = { "version" = ["2"] }\n}';
    expect((await root('PUT', '/v1/sys/policies/acl/v2-only', { policy })).status).toBe(204);
    token = (await root('POST', '/v1/auth/token/create', { policies: ['v2-only'], no_default_policy: true })).body.auth
      .client_token;
    lambda = secretsLambda(secretsFront({ core: async () => h.core }), []);
  });
  afterAll(() => h?.close());

  const viaLambda = async (method: string, url: string, body?: string, caller = token) => {
    const result = await lambda(
      gatewayEvent(method, url, { 'x-vault-token': caller, 'content-type': 'application/json' }, { body }),
    );
    return { status: result.statusCode, body: result.body ? JSON.parse(result.body) : undefined };
  };

  it('the constraint holds on the query: ?version=1 is 403, ?version=2 is version 2', async () => {
    expect((await h.call('GET', '/v1/kv2/data/app?version=1', { token })).status).toBe(403);
    expect((await viaLambda('GET', '/v1/kv2/data/app?version=1')).status).toBe(403);
    expect((await viaLambda('GET', '/v1/kv2/data/app?version=2')).body.data.data).toEqual({ secret: 'version-2' });
  });

  it('Lambda adapter: GET with body {"version":1} reads the latest version, never version 1', async () => {
    const read = await viaLambda('GET', '/v1/kv2/data/app', '{"version":1}');
    expect(read.status).toBe(200);
    expect(read.body.data.data).toEqual({ secret: 'version-2' });
    const both = await viaLambda('GET', '/v1/kv2/data/app?version=2', '{"version":1}');
    expect(both.body.data.data).toEqual({ secret: 'version-2' });
    // A list is a read too: its body is not read either (an unparseable one is no 400).
    expect((await viaLambda('LIST', '/v1/kv2/metadata', '{not json')).status).toBe(403);
  });

  it('a DELETE is its query too, as in Vault: its body is never decoded nor given to the handler', async () => {
    // Decoding happens before authorisation: a body that were read would make this a 400, not the policy's 403.
    expect((await viaLambda('DELETE', '/v1/kv2/data/app', '{not json')).status).toBe(403);
    expect((await root('PUT', '/v1/kv2/data/gone', { data: { secret: 'x' } })).status).toBe(200);
    const deleted = await viaLambda('DELETE', '/v1/kv2/data/gone', '{"versions":[7], not json', h.rootToken);
    expect(deleted.status).toBe(204);
    expect((await root('GET', '/v1/kv2/data/gone')).status).toBe(404);
  });

  it('`npm start`\'s node listener over a socket (a web Request cannot carry a GET body, a socket can): GET with body {"version":1} reads the latest version', async () => {
    for (const server of [
      http.createServer(
        secretsNodeListener({ core: async () => h.core, clientIp: () => '127.0.0.1', trustedProxies: [] }),
      ),
    ]) {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      const get = (path: string, body: string) =>
        new Promise<{ status: number; body: { data: { data: unknown } } }>((resolve, reject) => {
          const request = http.request(
            {
              host: '127.0.0.1',
              port,
              method: 'GET',
              path,
              headers: {
                'x-vault-token': token,
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(body),
              },
            },
            (response) => {
              let text = '';
              response.on('data', (chunk) => {
                text += chunk;
              });
              response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
            },
          );
          request.on('error', reject);
          request.end(body);
        });
      try {
        const read = await get('/v1/kv2/data/app', '{"version":1}');
        expect(read.status).toBe(200);
        expect(read.body.data.data).toEqual({ secret: 'version-2' });
        const malformed = await get('/v1/kv2/data/app?version=2', '{not json');
        expect(malformed.status).toBe(200);
        expect(malformed.body.data.data).toEqual({ secret: 'version-2' });
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    }
  });
});
