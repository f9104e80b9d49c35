/**
 * Issue 39 §3: documents fetched from other servers were read whole. A key-set URL streaming ~200 MiB raised the
 * process's memory by 0.9 GiB before the write was refused (in a Lambda, an out-of-memory kill), and since key sets
 * were refetched on any unknown `kid` with no cooldown, anonymous logins repeated the download once such a URL was
 * configured. Every answer from another server is now read with a cap (`lib/bounded-body.ts`): 256 KiB for key sets,
 * discovery documents and token endpoints (through the platform's fetch and through a configured CA), 1 MiB for the
 * engines' APIs (Google's, the mesh server's); past it the connection is dropped. A key set refetches for unknown
 * `kid`s twice at once, then once every 30 s.
 *
 * The servers here stream 64 MiB and count what they could hand to the socket before the client went away; the
 * kernel's buffers take some of it, so "bounded" is a few MiB, far from 64.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GoogleApiError, GoogleClient } from '../../packages/core/src/secrets/engines/cloud/google-client.ts';
import { ConsulClient, MeshBadAnswer } from '../../packages/core/src/secrets/engines/mesh/consul-client.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';
import { createTestCa } from '../support/test-pki.ts';

const streamed = 64 * 1024 * 1024;
const bounded = 16 * 1024 * 1024;

/** Writes `{"keys":[` and then spaces, 64 KiB at a time as the socket takes them, up to 64 MiB; counts the bytes. */
function flood(response: ServerResponse, counter: { sent: number }): void {
  response.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(64 * 1024, ' ');
  response.write('{"keys":[');
  const more = () => {
    while (counter.sent < streamed && !response.destroyed) {
      counter.sent += chunk.length;
      if (!response.write(chunk)) return void response.once('drain', more);
    }
    response.end(']}');
  };
  response.on('error', () => {});
  more();
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('answers from other servers are read with a cap', () => {
  let h: SecretsService;
  let server: Server;
  let tlsServer: Server;
  let base: string;
  let tlsBase: string;
  const ca = createTestCa();
  const counters: Record<string, { sent: number }> = {};
  let keyFetches = 0;
  let keys: Awaited<ReturnType<typeof generateKeyPair>>;
  let jwk: Record<string, unknown>;

  const counter = (name: string) => {
    counters[name] = { sent: 0 };
    return counters[name];
  };
  const route = (request: IncomingMessage, response: ServerResponse) => {
    const path = request.url ?? '';
    if (path === '/jwks') {
      keyFetches++;
      response.writeHead(200, { 'content-type': 'application/json' });
      return void response.end(JSON.stringify({ keys: [jwk] }));
    }
    if (path.endsWith('/.well-known/openid-configuration')) return flood(response, counter('discovery'));
    return flood(response, counter(path.slice(1)));
  };
  const root = (method: string, path: string, body?: unknown) =>
    h.call(method, path, { token: h.rootToken, ...(body === undefined ? {} : { body }) });

  beforeAll(async () => {
    h = await startSecretsInMemory();
    keys = await generateKeyPair('ES256', { extractable: true });
    jwk = { ...(await exportJWK(keys.publicKey)), kid: 'real', alg: 'ES256', use: 'sig' };
    server = createServer(route);
    base = `http://${await listen(server)}`;
    const leaf = ca.issue({ commonName: '127.0.0.1', usage: 'server' });
    tlsServer = createHttpsServer({ cert: leaf.cert, key: leaf.key }, route);
    tlsBase = `https://${await listen(tlsServer)}`;
    expect((await root('POST', '/v1/sys/auth/jwt', { type: 'jwt' })).status).toBe(204);
  });
  afterAll(async () => {
    server.closeAllConnections();
    tlsServer.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await new Promise((resolve) => tlsServer.close(resolve));
    await h.close();
  });

  for (const [what, config, name] of [
    ['a key set', () => ({ jwks_url: `${base}/huge-jwks` }), 'huge-jwks'],
    ['a key set behind a configured CA', () => ({ jwks_url: `${tlsBase}/huge-tls`, jwks_ca_pem: ca.cert }), 'huge-tls'],
    [
      'a discovery document',
      () => ({ oidc_discovery_url: `${base}/issuer`, oidc_client_id: 'c', oidc_client_secret: 's' }),
      'discovery',
    ],
  ] as const) {
    it(`${what} streaming 64 MiB: the config write is refused and the download cut off`, async () => {
      const refused = await root('POST', '/v1/auth/jwt/config', config());
      expect(refused.status).toBe(400);
      expect(refused.body.errors.join(' ')).toContain('is larger than 262144 bytes');
      expect((await root('GET', '/v1/auth/jwt/config')).body?.data?.jwks_url ?? '').not.toContain('huge');
      expect(counters[name]?.sent).toBeGreaterThan(0);
      expect(counters[name]?.sent).toBeLessThan(bounded);
    });
  }

  it('logins naming unknown kids refetch the key set twice, not once each', async () => {
    expect((await root('POST', '/v1/auth/jwt/config', { jwks_url: `${base}/jwks` })).status).toBe(204);
    expect(
      (await root('POST', '/v1/auth/jwt/role/r', { role_type: 'jwt', user_claim: 'sub', bound_audiences: 'keyhaven' }))
        .status,
    ).toBe(204);
    const now = Math.floor(h.clock.now() / 1000);
    const signed = (kid: string) =>
      new SignJWT({ sub: 'mallory', aud: 'keyhaven' })
        .setProtectedHeader({ alg: 'ES256', kid })
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .sign(keys.privateKey);
    expect(
      (await h.call('POST', '/v1/auth/jwt/login', { body: { role: 'r', jwt: await signed('real') } })).status,
    ).toBe(200);
    const before = keyFetches;
    for (let i = 0; i < 20; i++) {
      const login = await h.call('POST', '/v1/auth/jwt/login', {
        body: { role: 'r', jwt: await signed(`made-up-${i}`) },
      });
      expect(login.status).toBe(400);
      expect(login.body.errors.join(' ')).toContain('no key in the key set matches the token');
    }
    expect(keyFetches - before).toBe(2);
    // The real key still logs in, from the keys already held.
    expect(
      (await h.call('POST', '/v1/auth/jwt/login', { body: { role: 'r', jwt: await signed('real') } })).status,
    ).toBe(200);
    expect(keyFetches - before).toBe(2);
  });

  it("the cloud engine's Google API calls: an answer past 1 MiB is a 502, the download cut off", async () => {
    const endpoints = {
      iam: `${base}/huge-iam`,
      iamCredentials: base,
      resourceManager: base,
      storage: base,
      sts: base,
      retryBaseMs: 1,
    };
    const google = new GoogleClient(endpoints, async () => 'token');
    const call = google.call('GET', `${base}/huge-google`);
    await expect(call).rejects.toBeInstanceOf(GoogleApiError);
    await expect(call).rejects.toMatchObject({
      httpStatus: 502,
      message: expect.stringContaining('larger than 1048576'),
    });
    expect(counters['huge-google']?.sent).toBeLessThan(bounded);
  });

  it("the mesh engine's server: an answer past 1 MiB is refused, the download cut off", async () => {
    const mesh = new ConsulClient({
      address: base.slice('http://'.length),
      scheme: 'http',
      token: 'management',
      caCert: '',
      clientCert: '',
      clientKey: '',
    });
    const call = mesh.agentVersion();
    await expect(call).rejects.toBeInstanceOf(MeshBadAnswer);
    await expect(call).rejects.toThrow('is larger than 1048576 bytes');
    expect(counters['v1/agent/self']?.sent).toBeLessThan(bounded);
  });
});
