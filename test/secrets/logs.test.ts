import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepExpired } from '../../packages/core/src/entry-points/expiry-sweeps.ts';
import { jsonLogger } from '../../packages/core/src/lib/log.ts';
import { leaseKey } from '../../packages/core/src/secrets/leases/lease-manager.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { onTableChange } from '../../packages/core/src/entry-points/table-changes.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/**
 * Structured JSON logs: one line per request with its id, method, path, status and duration, and never a
 * token, secret value, password or key, across a full run of everything the core does.
 */
describe('logs', () => {
  const lines: string[] = [];
  let h: SecretsService;
  let keyDir: string;
  /** Every secret the run handles; none may appear in the log text. */
  const secrets = new Map<string, string>();
  let requests = 0;

  const call = async (method: string, url: string, options: Parameters<SecretsService['call']>[2] = {}) => {
    requests++;
    return h.call(method, url, options);
  };

  beforeAll(async () => {
    keyDir = await mkdtemp(path.join(tmpdir(), 'keyhaven-logs-'));
    const keyFile = path.join(keyDir, 'keyring.key');
    h = await startSecretsInMemory({ log: jsonLogger((line) => lines.push(line)), keySource: fileKeySource(keyFile) });
    const root = h.rootToken;
    secrets.set('root token', root);
    const key = readFileSync(keyFile);
    secrets.set('key file (hex)', key.toString('hex'));
    secrets.set('key file (base64)', key.toString('base64'));
    secrets.set('key file (base64url)', key.toString('base64url'));
    secrets.set('token key (hex)', Buffer.from(h.core.keyring.tokenKey).toString('hex'));
    secrets.set('token key (base64)', Buffer.from(h.core.keyring.tokenKey).toString('base64'));

    // Policies, and tokens of every kind.
    const policy =
      'path "secret/app/*" { capabilities = ["create", "read", "update", "list"] }\npath "auth/token/create" { capabilities = ["update"] }';
    expect((await call('PUT', '/v1/sys/policies/acl/app', { token: root, body: { policy } })).status).toBe(204);
    const service = await call('POST', '/v1/auth/token/create', {
      token: root,
      body: { policies: ['app'], ttl: '1h', display_name: 'svc' },
    });
    expect(service.status).toBe(200);
    const serviceToken: string = service.body.auth.client_token;
    secrets.set('service token', serviceToken);
    const batch = await call('POST', '/v1/auth/token/create', {
      token: root,
      body: { policies: ['app'], type: 'batch', ttl: '30m' },
    });
    expect(batch.status).toBe(200);
    secrets.set('batch token', batch.body.auth.client_token);
    const child = await call('POST', '/v1/auth/token/create', {
      token: serviceToken,
      body: { policies: ['app'], ttl: '10m' },
    });
    expect(child.status).toBe(200);
    secrets.set('child token', child.body.auth.client_token);
    const orphan = await call('POST', '/v1/auth/token/create-orphan', {
      token: root,
      body: { policies: ['app'], num_uses: 3 },
    });
    secrets.set('orphan token', orphan.body.auth.client_token);
    const custom = await call('POST', '/v1/auth/token/create', {
      token: root,
      body: { id: 'my-very-own-token-value-0451', policies: ['app'] },
    });
    expect(custom.status).toBe(200);
    secrets.set('custom token id', 'my-very-own-token-value-0451');

    // Secrets: written, read under a lease by service and batch tokens, listed.
    const password = 'correct-horse-battery-staple-7719';
    secrets.set('password', password);
    secrets.set('api key', 'AKIA-LOGTEST-4242-SECRET');
    expect(
      (await call('POST', '/v1/secret/app/db', { token: serviceToken, body: { username: 'app', password, ttl: '1h' } }))
        .status,
    ).toBe(204);
    expect(
      (await call('POST', '/v1/secret/app/api', { token: root, body: { key: 'AKIA-LOGTEST-4242-SECRET' } })).status,
    ).toBe(204);
    const read = await call('GET', '/v1/secret/app/db', { token: serviceToken });
    expect(read.body.data.password).toBe(password);
    const leaseId: string = read.body.lease_id;
    expect(
      (await call('GET', '/v1/secret/app/db', { headers: { Authorization: `Bearer ${batch.body.auth.client_token}` } }))
        .status,
    ).toBe(200);
    expect((await call('LIST', '/v1/secret/app', { token: serviceToken })).status).toBe(200);

    // Leases: look up, renew, revoke.
    expect((await call('PUT', '/v1/sys/leases/lookup', { token: root, body: { lease_id: leaseId } })).status).toBe(200);
    expect(
      (await call('PUT', '/v1/sys/leases/renew', { token: root, body: { lease_id: leaseId, increment: '2h' } })).status,
    ).toBe(200);
    expect((await call('PUT', '/v1/sys/leases/revoke', { token: root, body: { lease_id: leaseId } })).status).toBe(204);

    // Tokens: look up by token, self and accessor; renew; revoke.
    expect((await call('POST', '/v1/auth/token/lookup', { token: root, body: { token: serviceToken } })).status).toBe(
      200,
    );
    expect(
      (await call('GET', '/v1/auth/token/lookup-self', { headers: { 'X-Vault-Token': serviceToken } })).status,
    ).toBe(200);
    expect(
      (
        await call('POST', '/v1/auth/token/lookup-accessor', {
          token: root,
          body: { accessor: service.body.auth.accessor },
        })
      ).status,
    ).toBe(200);
    expect(
      (await call('POST', '/v1/auth/token/renew-self', { token: serviceToken, body: { increment: '30m' } })).status,
    ).toBe(200);
    expect(
      (await call('POST', '/v1/auth/token/renew', { token: root, body: { token: child.body.auth.client_token } }))
        .status,
    ).toBe(200);
    expect(
      (await call('POST', '/v1/sys/capabilities-self', { token: serviceToken, body: { paths: ['secret/app/db'] } }))
        .status,
    ).toBe(200);
    expect(
      (
        await call('POST', '/v1/auth/token/revoke-accessor', {
          token: root,
          body: { accessor: orphan.body.auth.accessor },
        })
      ).status,
    ).toBe(204);

    // Failing requests, several of which carry a secret in the place a careless log would print.
    expect(
      (await call('GET', '/v1/secret/app/db', { token: 'hvs.not-a-real-token-but-secret-looking-91' })).status,
    ).toBe(403);
    secrets.set('rejected token', 'hvs.not-a-real-token-but-secret-looking-91');
    expect((await call('GET', '/v1/sys/mounts', { token: serviceToken })).status).toBe(403);
    const badJson = await call('POST', '/v1/secret/app/broken', {
      token: root,
      body: '{"password": "unterminated-secret-0042',
    });
    expect(badJson.status).toBe(400);
    secrets.set('password in a malformed body', 'unterminated-secret-0042');
    expect(
      (await call('POST', '/v1/auth/token/lookup', { token: root, body: { token: 'hvs.looked-up-but-unknown-0077' } }))
        .status,
    ).toBe(403);
    secrets.set('unknown token looked up', 'hvs.looked-up-but-unknown-0077');
    // Old Vault clients put the token in the URL; the path is logged, the token must not be.
    expect((await call('POST', `/v1/auth/token/lookup/${serviceToken}`, { token: root })).status).toBe(404);
    expect((await call('GET', '/v1/nothing/here', { token: root })).status).toBe(404);
    expect(
      (await call('POST', '/v1/secret/app/big', { token: root, body: { blob: 'x'.repeat(1024 * 1024) } })).status,
    ).toBe(413);
    const declared = { 'Content-Length': String(5 * 1024 * 1024) };
    expect((await call('POST', '/v1/secret/app/big', { token: root, body: '{}', headers: declared })).status).toBe(413);
    expect((await call('GET', '/v1/secret/app/%E0%A4%A', { token: root })).status).toBe(400);

    // Revocation of the service token takes its child and its leases.
    const second = await call('GET', '/v1/secret/app/db', { token: serviceToken });
    expect(second.body.lease_id).not.toBe('');
    expect((await call('POST', '/v1/auth/token/revoke', { token: root, body: { token: serviceToken } })).status).toBe(
      204,
    );
    expect((await call('POST', '/v1/auth/token/revoke-self', { token: custom.body.auth.client_token })).status).toBe(
      204,
    );

    // The jobs: the TTL backstop (DynamoDB deleted a lease before the sweep) and the expiry sweep.
    const third = await call('GET', '/v1/secret/app/db', { token: root });
    const lease = await h.core.leases.get(third.body.lease_id);
    expect(lease).toBeDefined();
    await h.core.store.delete(leaseKey(third.body.lease_id));
    await onTableChange(h.core, [{ eventName: 'REMOVE', byTtl: true, ...(lease ? { oldImage: lease } : {}) }]);
    await call('GET', '/v1/secret/app/db', { token: root });
    h.clock.advance(2 * 3600);
    expect((await sweepExpired(h.core)).leases).toBeGreaterThan(0);
  });

  afterAll(async () => {
    await h.close();
    await rm(keyDir, { recursive: true, force: true });
  });

  const parsed = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);

  it('every line is one JSON object with a time, a level and a message', () => {
    expect(lines.length).toBeGreaterThan(requests);
    for (const line of lines) {
      expect(line).not.toContain('\n');
      const entry = JSON.parse(line);
      expect(entry).toMatchObject({
        time: expect.any(String),
        level: expect.stringMatching(/^(info|error)$/),
        message: expect.any(String),
      });
      expect(new Date(entry.time).toISOString()).toBe(entry.time);
    }
  });

  it('every request has one line with its id, method, path, status and duration', () => {
    const requestLines = parsed().filter((entry) => entry.message === 'request');
    expect(requestLines).toHaveLength(requests);
    for (const entry of requestLines) {
      expect(entry).toEqual({
        time: expect.any(String),
        level: 'info',
        message: 'request',
        requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        method: expect.stringMatching(/^[A-Z]+$/),
        path: expect.stringMatching(/^\/v1\//),
        status: expect.any(Number),
        durationMs: expect.any(Number),
      });
      expect(entry.durationMs as number).toBeGreaterThanOrEqual(0);
    }
    expect(new Set(requestLines.map((entry) => entry.requestId)).size).toBe(requests);
    const statuses = requestLines.map((entry) => entry.status);
    expect(statuses).toEqual(expect.arrayContaining([200, 204, 400, 403, 404, 413]));
    expect(requestLines).toContainEqual(
      expect.objectContaining({ method: 'LIST', path: '/v1/secret/app', status: 200 }),
    );
    expect(requestLines).toContainEqual(
      expect.objectContaining({ method: 'PUT', path: '/v1/sys/leases/revoke', status: 204 }),
    );
    expect(requestLines).toContainEqual(
      expect.objectContaining({ method: 'POST', path: '/v1/auth/token/lookup/<redacted>', status: 404 }),
    );
    // Requests the HTTP adapter refuses before the pipeline are logged like the rest.
    expect(requestLines.filter((entry) => entry.status === 413)).toHaveLength(2);
    expect(requestLines).toContainEqual(
      expect.objectContaining({ method: 'GET', path: '/v1/secret/app/%E0%A4%A', status: 400 }),
    );
  });

  it('paths are logged without anything shaped like a token, and cut when very long', async () => {
    await call('GET', '/v1/secret/app/hvs.AbCdEf0123456789/x', { token: h.rootToken });
    await call('GET', `/v1/secret/${'p'.repeat(3000)}`, { token: h.rootToken });
    const [tokenShaped, long] = parsed()
      .filter((entry) => entry.message === 'request')
      .slice(-2);
    expect(tokenShaped?.path).toBe('/v1/secret/app/<redacted>/x');
    expect(String(long?.path).length).toBeLessThan(520);
  });

  it('the request id in the log is the one the client got', async () => {
    const reply = await call('GET', '/v1/secret/app/api', { token: h.rootToken });
    const last = parsed()
      .filter((entry) => entry.message === 'request')
      .at(-1);
    expect(last).toMatchObject({ requestId: reply.body.request_id, path: '/v1/secret/app/api', status: 200 });
  });

  it('no token, secret value, password or key appears anywhere in the log text', () => {
    const text = lines.join('\n');
    expect(secrets.size).toBeGreaterThanOrEqual(15);
    for (const [what, value] of secrets) {
      expect(value.length, what).toBeGreaterThan(8);
      expect(text.includes(value), `${what} appears in the logs`).toBe(false);
    }
    // Token hashes are what the table stores; they are keyed, but they stay out of logs too.
    for (const what of ['service token', 'child token', 'root token']) {
      const hash = h.core.keyring.hash(secrets.get(what) as string);
      expect(text.includes(hash), `hash of ${what} appears in the logs`).toBe(false);
    }
  });
});
