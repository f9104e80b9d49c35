import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { googleEndpointVariables } from '../../packages/core/src/secrets/mounts/operator-settings.ts';
import { type ConsulEmulator, startConsulEmulator } from '../emulators/consul.ts';
import { type CloudEngine, startCloudEngine } from '../support/cloud-engine.ts';
import { managerDn, managerPassword, peopleDn, type Slapd, startSlapd } from '../support/slapd.ts';

/**
 * Issue 23 §3, operator settings through the API. Attacker: a narrow token allowed to enable and tune mounts
 * (`sys/mounts/*`, no sudo) and to write each engine's and auth method's config, but not to read any credential. They
 * try to aim where an engine sends its credentials at a host they run (here a listener on 127.0.0.1): the cloud
 * engine's Google endpoints (`iam_endpoint`, `token_endpoint`, …) as mount options at enable and at tune, an auth
 * mount's options, the directory's `url`/TLS settings without its bind password, the mesh server's address without its
 * token, and the OIDC discovery URL without the client secret. What they must never reach: the cloud engine's root
 * access token, the directory's bind password, the mesh management token, the OIDC client secret. Proof: the
 * listener receives nothing that carries a stored credential, and the Google emulator (the operator's configuration)
 * still receives the engine's calls.
 */

interface Listener {
  url: string;
  port: number;
  requests: Array<{ method: string; url: string; headers: IncomingHttpHeaders; body: string }>;
  connections: number;
  close(): Promise<void>;
}

/** An HTTP listener that records every request (and every TCP connection) it gets. */
async function startListener(): Promise<Listener> {
  const requests: Listener['requests'] = [];
  const state = { connections: 0 };
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      requests.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
      response.statusCode = 500;
      response.end('{}');
    });
  });
  server.on('connection', () => {
    state.connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    get connections() {
      return state.connections;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A TCP listener standing in for an attacker's directory: it counts connections (an LDAP bind would be one). */
async function startTcpListener(): Promise<{ port: number; connections: () => number; close(): Promise<void> }> {
  let connections = 0;
  const server: TcpServer = createTcpServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const narrowPolicy = `
path "sys/mounts/*" { capabilities = ["create", "read", "update"] }
path "sys/auth/*" { capabilities = ["create", "read", "update"] }
path "cloud/config" { capabilities = ["create", "read", "update"] }
path "cloud/roleset/*" { capabilities = ["create", "read", "update"] }
path "ldap/config" { capabilities = ["create", "read", "update"] }
path "mesh/config/access" { capabilities = ["create", "read", "update"] }
path "auth/jwt/config" { capabilities = ["create", "read", "update"] }
`;

let engine: CloudEngine;
let attacker: Listener;
let narrow: string;

beforeAll(async () => {
  [engine, attacker] = await Promise.all([startCloudEngine(), startListener()]);
  const root = (method: string, path: string, body?: unknown) =>
    engine.h.call(method, path, { token: engine.h.rootToken, body });
  expect((await root('PUT', '/v1/sys/policies/acl/tuner', { policy: narrowPolicy })).status).toBe(204);
  const created = await root('POST', '/v1/auth/token/create', { policies: ['tuner'], ttl: '1h' });
  narrow = created.body.auth.client_token;
});
afterAll(async () => {
  await Promise.all([engine?.close(), attacker?.close()]);
});

const asNarrow = (method: string, path: string, body?: unknown) => engine.h.call(method, path, { token: narrow, body });

describe('cloud engine endpoints are operator configuration (narrow token with sys/mounts/* tune and enable, no sudo)', () => {
  for (const option of Object.keys(googleEndpointVariables)) {
    it(`tune of options.${option} is refused with 400 naming it as operator configuration, and nothing is stored`, async () => {
      const reply = await asNarrow('POST', '/v1/sys/mounts/cloud/tune', { options: { [option]: attacker.url } });
      expect(reply.status).toBe(400);
      expect(reply.body.errors[0]).toContain(`options.${option}`);
      expect(reply.body.errors[0]).toContain('operator configuration');
      expect(JSON.stringify((await asNarrow('GET', '/v1/sys/mounts/cloud')).body.data.options ?? {})).not.toContain(
        attacker.url,
      );
    });
  }

  it('enable with options.iam_endpoint (and any *_endpoint / *_url / *_uri / *_address / *_host option) is refused with 400', async () => {
    for (const option of ['iam_endpoint', 'token_endpoint', 'api_url', 'TOKEN_URI', 'server_address', 'proxy_host']) {
      const reply = await asNarrow('POST', '/v1/sys/mounts/cloud-evil', {
        type: 'cloud',
        options: { [option]: attacker.url },
      });
      expect(reply.status, option).toBe(400);
      expect(reply.body.errors[0]).toContain(`options.${option}`);
    }
    expect((await asNarrow('GET', '/v1/sys/mounts/cloud-evil')).status).toBe(404);
  });

  it('an auth method mount is held to the same rule, at enable and at tune, even for root', async () => {
    const root = (method: string, path: string, body?: unknown) =>
      engine.h.call(method, path, { token: engine.h.rootToken, body });
    const enable = await root('POST', '/v1/sys/auth/jwt-evil', { type: 'jwt', options: { jwks_url: attacker.url } });
    expect(enable.status).toBe(400);
    expect(enable.body.errors[0]).toContain('options.jwks_url');
    expect((await root('POST', '/v1/sys/auth/jwt', { type: 'jwt' })).status).toBe(204);
    const tune = await root('POST', '/v1/sys/auth/jwt/tune', { options: { oidc_discovery_url: attacker.url } });
    expect(tune.status).toBe(400);
    expect(tune.body.errors[0]).toContain('options.oidc_discovery_url');
  });

  it('after every attempt the engine still calls only the emulator the operator configured: the listener receives nothing', async () => {
    const before = engine.google.calls.length;
    const bindings = 'resource "//cloudresourcemanager.googleapis.com/projects/proj-1" { roles = ["roles/viewer"] }';
    const roleset = await asNarrow('POST', '/v1/cloud/roleset/probe', {
      project: 'proj-1',
      bindings,
      secret_type: 'access_token',
      token_scopes: 'https://www.googleapis.com/auth/cloud-platform',
    });
    expect(roleset.status, JSON.stringify(roleset.body)).toBe(204);
    expect(engine.google.calls.length).toBeGreaterThan(before);
    expect(attacker.requests).toEqual([]);
    expect(attacker.connections).toBe(0);
  });
});

describe('stored credentials go only where they were given for (narrow token with config write, no sudo)', () => {
  let slapd: Slapd;
  let consul: ConsulEmulator;
  beforeAll(async () => {
    [slapd, consul] = await Promise.all([startSlapd(), startConsulEmulator()]);
    const root = (method: string, path: string, body?: unknown) =>
      engine.h.call(method, path, { token: engine.h.rootToken, body });
    expect((await root('POST', '/v1/sys/mounts/ldap', { type: 'ldap' })).status).toBe(204);
    expect(
      (
        await root('POST', '/v1/ldap/config', {
          binddn: managerDn,
          bindpass: managerPassword,
          url: slapd.url,
          userdn: peopleDn,
        })
      ).status,
    ).toBeLessThan(300);
    expect((await root('POST', '/v1/sys/mounts/mesh', { type: 'mesh' })).status).toBe(204);
  });
  afterAll(async () => {
    await Promise.all([slapd?.close(), consul?.close()]);
  });

  it('ldap: changing url, starttls, insecure_tls, certificate or tls_min_version without bindpass is refused with 400; the fake directory is never contacted', async () => {
    const fake = await startTcpListener();
    try {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ url: `ldap://127.0.0.1:${fake.port}` }, '"url"'],
        [{ insecure_tls: true }, '"insecure_tls"'],
        [{ starttls: true }, '"starttls"'],
        [{ certificate: slapd.caCert }, '"certificate"'],
        [{ tls_min_version: 'tls10' }, '"tls_min_version"'],
      ];
      for (const [body, field] of cases) {
        const reply = await asNarrow('POST', '/v1/ldap/config', body);
        expect(reply.status, JSON.stringify(body)).toBe(400);
        expect(reply.body.errors[0]).toContain('"bindpass" is required when');
        expect(reply.body.errors[0]).toContain(field);
      }
      expect((await asNarrow('GET', '/v1/ldap/config')).body.data.url).toBe(slapd.url);
      expect(fake.connections()).toBe(0);
      // With the credential given again, the destination may change: whoever sends it knows it already.
      const moved = await asNarrow('POST', '/v1/ldap/config', {
        url: `ldap://127.0.0.1:${fake.port}`,
        bindpass: 'a-password-the-attacker-knows',
      });
      expect(moved.status).toBeLessThan(300);
    } finally {
      await fake.close();
    }
  });

  it('mesh: a new address without a token never receives the stored management token (the write replaces it)', async () => {
    const management = ((await consul.request('PUT', '/v1/acl/bootstrap')).json as { SecretID: string }).SecretID;
    const configured = await engine.h.call('POST', '/v1/mesh/config/access', {
      token: engine.h.rootToken,
      body: { address: consul.address, token: management },
    });
    expect(configured.status).toBe(204);
    const reply = await asNarrow('POST', '/v1/mesh/config/access', { address: `127.0.0.1:${attacker.port}` });
    // The engine tries to bootstrap the new server (it has no token for it) and the listener refuses: 502 or 400.
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(attacker.requests)).not.toContain(management);
    expect(
      attacker.requests.every(
        (request) =>
          request.headers['x-consul-token'] === undefined &&
          !String(request.headers.authorization ?? '').includes(management),
      ),
    ).toBe(true);
  });

  it('jwt: a new oidc_discovery_url with the client id but without the client secret is refused; the secret is never sent there', async () => {
    const reply = await asNarrow('POST', '/v1/auth/jwt/config', {
      oidc_discovery_url: attacker.url,
      oidc_client_id: 'keyhaven',
    });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toContain('oidc_client_secret');
    expect(attacker.requests.filter((request) => request.url.includes('.well-known'))).toEqual([]);
  });
});
