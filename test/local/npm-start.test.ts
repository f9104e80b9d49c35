import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import {
  freePort,
  killLeftovers,
  launch,
  portIsFree,
  START_TIMEOUT_MS,
  type Started,
  start,
  stopWith,
} from '../support/npm-start.ts';

const run = promisify(execFile);

/**
 * `npm start` as a user runs it: the real process, real ports, real DynamoDB Local, real HTTP (fetch and
 * curl), real signals. Only the data directory, ports and dev root token come from the environment.
 */
/** DynamoDB Local JVMs whose command line names this folder. */
async function javaProcessesFor(folder: string): Promise<string[]> {
  try {
    const { stdout } = await run('pgrep', ['-f', '-a', folder]);
    return stdout
      .split('\n')
      .filter((line) => line.includes('DynamoDBLocal'))
      .filter(Boolean);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

interface Reply {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response JSON
  body: any;
  text: string;
}

function client(base: string) {
  return async (method: string, url: string, token?: string, body?: unknown): Promise<Reply> => {
    const response = await fetch(`${base}${url}`, {
      method,
      headers: { 'Content-Type': 'application/json', ...(token ? { 'X-Secrets-Token': token } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: response.status, body: parsed, text };
  };
}

async function curl(args: string[]): Promise<{ status: number; body: string }> {
  const { stdout } = await run('curl', ['-s', '-w', '\n%{http_code}', ...args]);
  const cut = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
}

describe('npm start', () => {
  let dataDir: string;
  let secretsPort: number;
  let schedulerPort: number;
  const rootToken = `dev-root-${randomUUID()}`;
  let env: Record<string, string>;
  let first: Started;
  let call: ReturnType<typeof client>;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'keyhaven-npm-start-'));
    secretsPort = await freePort();
    schedulerPort = await freePort();
    env = {
      KEYHAVEN_DATA_DIR: dataDir,
      KEYHAVEN_SECRETS_PORT: String(secretsPort),
      KEYHAVEN_SCHEDULER_PORT: String(schedulerPort),
      KEYHAVEN_DEV_ROOT_TOKEN: rootToken,
    };
    // As package.json's `start` runs it (no tsx launcher in between): the SIGTERM test signals the whole group.
    first = await start(env);
    call = client(first.secrets);
  }, START_TIMEOUT_MS + 10_000);

  afterAll(async () => {
    killLeftovers();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('serves on the configured ports and is healthy', async () => {
    expect(first.secrets).toBe(`http://127.0.0.1:${secretsPort}`);
    expect(first.scheduler).toBe(`http://127.0.0.1:${schedulerPort}`);
    const health = await call('GET', '/v1/sys/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({
      initialized: true,
      sealed: false,
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
    });
    expect((await javaProcessesFor(dataDir)).length).toBe(1);
  });

  it('prints the root token once, in the banner and in no log line', () => {
    const output = first.stdout();
    expect(output.split(rootToken).length - 1).toBe(1);
    expect(output).toMatch(new RegExp(`root token:\\s+${rootToken}`));
  });

  it('mounts the dev defaults for every engine this build serves', async () => {
    const mounts = await call('GET', '/v1/sys/mounts', rootToken);
    expect(mounts.status).toBe(200);
    expect(mounts.body.data).toMatchObject({
      'secret/': { type: 'kv', options: { version: '2' } },
      'kv/': { type: 'kv' },
      'sys/': { type: 'system' },
    });
    const auth = await call('GET', '/v1/sys/auth', rootToken);
    expect(auth.body.data).toMatchObject({ 'token/': { type: 'token' } });
    const served = new Set(backendsOf(allSecretsFamilies).map((backend) => backend.type));
    for (const type of ['cloud', 'ldap', 'mesh']) {
      if (served.has(type)) expect(mounts.body.data[`${type}/`], type).toMatchObject({ type });
    }
    if (served.has('jwt')) expect(auth.body.data['jwt/']).toMatchObject({ type: 'jwt' });
  });

  it('runs the README flow over HTTP', async () => {
    // Secrets, one read under a lease.
    expect((await call('POST', '/v1/kv/app/db', rootToken, { password: 's3cret', ttl: '1h' })).status).toBe(204);
    expect((await call('POST', '/v1/kv/ops/key', rootToken, { value: 'k' })).status).toBe(204);
    // A policy and a token with it.
    const policy = 'path "kv/app/*" { capabilities = ["read", "list"] }\npath "kv/app" { capabilities = ["list"] }';
    expect((await call('PUT', '/v1/sys/policies/acl/app-reader', rootToken, { policy })).status).toBe(204);
    const created = await call('POST', '/v1/auth/token/create', rootToken, { policies: ['app-reader'], ttl: '2h' });
    expect(created.status).toBe(200);
    const app: string = created.body.auth.client_token;
    expect(created.body.auth).toMatchObject({ policies: ['app-reader', 'default'], lease_duration: 7200 });

    // Read and list what the policy allows.
    const read = await call('GET', '/v1/kv/app/db', app);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ data: { password: 's3cret', ttl: '1h' }, renewable: true, lease_duration: 3600 });
    expect(read.body.lease_id).toMatch(/^kv\/app\/db\//);
    const listed = await call('GET', '/v1/kv/app?list=true', app);
    expect(listed.status).toBe(200);
    expect(listed.body.data.keys).toEqual(['db']);

    // Anything else is refused.
    expect(await call('GET', '/v1/kv/ops/key', app)).toMatchObject({
      status: 403,
      body: { errors: ['permission denied'] },
    });
    expect((await call('POST', '/v1/kv/app/db', app, { password: 'mine' })).status).toBe(403);
    expect((await call('GET', '/v1/sys/mounts', app)).status).toBe(403);
    expect((await call('GET', '/v1/kv/app/db')).status).toBe(403);

    // Look up, renew and revoke the lease.
    const leaseId: string = read.body.lease_id;
    const lookup = await call('PUT', '/v1/sys/leases/lookup', rootToken, { lease_id: leaseId });
    expect(lookup.status).toBe(200);
    expect(lookup.body.data).toMatchObject({ id: leaseId, renewable: true });
    const renewed = await call('PUT', '/v1/sys/leases/renew', rootToken, { lease_id: leaseId, increment: '30m' });
    expect(renewed.status).toBe(200);
    expect(renewed.body).toMatchObject({ lease_id: leaseId, lease_duration: 1800 });
    expect((await call('PUT', '/v1/sys/leases/revoke', rootToken, { lease_id: leaseId })).status).toBe(204);
    expect((await call('PUT', '/v1/sys/leases/lookup', rootToken, { lease_id: leaseId })).status).toBe(404);

    // Own token.
    const self = await call('GET', '/v1/auth/token/lookup-self', app);
    expect(self.status).toBe(200);
    expect(self.body.data).toMatchObject({ policies: ['app-reader', 'default'], type: 'service' });

    // Mount another kv, use it under a lease, disable it: its leases go with it.
    expect(
      (await call('POST', '/v1/sys/mounts/team-kv', rootToken, { type: 'kv', config: { default_lease_ttl: '10m' } }))
        .status,
    ).toBe(204);
    expect((await call('GET', '/v1/sys/mounts', rootToken)).body.data['team-kv/']).toMatchObject({
      type: 'kv',
      config: { default_lease_ttl: 600 },
    });
    await call('POST', '/v1/team-kv/thing', rootToken, { value: 1, ttl: '5m' });
    const teamLease = (await call('GET', '/v1/team-kv/thing', rootToken)).body.lease_id;
    expect(teamLease).toMatch(/^team-kv\/thing\//);
    expect((await call('DELETE', '/v1/sys/mounts/team-kv', rootToken)).status).toBe(204);
    expect((await call('GET', '/v1/sys/mounts', rootToken)).body.data['team-kv/']).toBeUndefined();
    expect((await call('PUT', '/v1/sys/leases/lookup', rootToken, { lease_id: teamLease })).status).toBe(404);
    expect((await call('GET', '/v1/team-kv/thing', rootToken)).status).toBe(404);

    // Revoke the app token.
    expect((await call('POST', '/v1/auth/token/revoke', rootToken, { token: app })).status).toBe(204);
    expect((await call('GET', '/v1/kv/app/db', app)).status).toBe(403);
  });

  it('answers curl -X LIST over the wire, and Vault clients headers', async () => {
    const policy = 'path "kv/app/*" { capabilities = ["read", "list"] }';
    await call('PUT', '/v1/sys/policies/acl/lister', rootToken, { policy });
    const token = (await call('POST', '/v1/auth/token/create', rootToken, { policies: ['lister'] })).body.auth
      .client_token;
    await call('POST', '/v1/kv/app/other', rootToken, { v: 1 });

    const list = await curl(['-H', `X-Secrets-Token: ${token}`, '-X', 'LIST', `${first.secrets}/v1/kv/app`]);
    expect(list.status).toBe(200);
    expect(JSON.parse(list.body).data.keys).toEqual(['db', 'other']);
    const withQuery = await curl([
      '-H',
      `X-Vault-Token: ${token}`,
      '-X',
      'LIST',
      `${first.secrets}/v1/kv/app/?foo=bar`,
    ]);
    expect(JSON.parse(withQuery.body).data.keys).toEqual(['db', 'other']);
    const denied = await curl(['-H', `Authorization: Bearer ${token}`, '-X', 'LIST', `${first.secrets}/v1/kv`]);
    expect(denied.status).toBe(403);
    const empty = await curl(['-H', `X-Secrets-Token: ${rootToken}`, '-X', 'LIST', `${first.secrets}/v1/kv/nothing`]);
    expect(empty).toEqual({ status: 404, body: '{"errors":[]}' });

    // Several requests on one kept-alive connection, LIST among them.
    const url = `${first.secrets}/v1/kv/app`;
    const { stdout } = await run('curl', ['-s', '-H', `X-Secrets-Token: ${token}`, '-X', 'LIST', url, url, url]);
    expect(stdout.match(/"keys":\["db","other"\]/g)).toHaveLength(3);

    const put = await curl([
      '-H',
      `X-Secrets-Token: ${rootToken}`,
      '-X',
      'PUT',
      '-d',
      '{"v":2}',
      `${first.secrets}/v1/kv/app/curl`,
    ]);
    expect(put.status).toBe(204);
  });

  it('rejects an oversized body over the wire with 413', async () => {
    const response = await fetch(`${first.secrets}/v1/kv/app/huge`, {
      method: 'POST',
      headers: { 'X-Secrets-Token': rootToken, 'Content-Type': 'application/json' },
      body: JSON.stringify({ blob: 'x'.repeat(2 * 1024 * 1024) }),
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ errors: [expect.stringContaining('larger than')] });

    // Sent in chunks without a Content-Length: refused once it passes the limit, not buffered whole.
    let sent = 0;
    const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += chunk.byteLength;
        if (sent > 64 * 1024 * 1024) controller.close();
        else controller.enqueue(chunk);
      },
    });
    const chunked = await fetch(`${first.secrets}/v1/kv/app/huge`, {
      method: 'POST',
      headers: { 'X-Secrets-Token': rootToken, 'Content-Type': 'application/json' },
      body: endless,
      duplex: 'half',
    } as RequestInit).catch((error: Error) => error);
    // The server answers 413 as soon as it has seen too much; a client still sending may see the reset instead.
    if (chunked instanceof Response) expect(chunked.status).toBe(413);
    expect(sent).toBeLessThan(64 * 1024 * 1024);
    expect((await call('GET', '/v1/sys/health')).status).toBe(200);
  });

  it('the scheduler answers its health check, its ACL API, and 404 in plain text elsewhere', async () => {
    const health = await fetch(`${first.scheduler}/v1/agent/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ server: { ok: true } });
    const tokens = await fetch(`${first.scheduler}/v1/acl/tokens`);
    expect(tokens.status).toBe(403);
    const other = await fetch(`${first.scheduler}/v1/no-such-thing`);
    expect(other.status).toBe(404);
    expect(other.headers.get('content-type')).toMatch(/^text\/plain/);
  });

  it('revokes an expired lease on its own timer (real time)', async () => {
    expect((await call('POST', '/v1/kv/app/short', rootToken, { value: 'brief', ttl: '2s' })).status).toBe(204);
    const read = await call('GET', '/v1/kv/app/short', rootToken);
    expect(read.body.lease_duration).toBe(2);
    const leaseId: string = read.body.lease_id;
    expect((await call('PUT', '/v1/sys/leases/lookup', rootToken, { lease_id: leaseId })).status).toBe(200);
    const started = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - started < 10_000) {
      await sleep(250);
      status = (await call('PUT', '/v1/sys/leases/lookup', rootToken, { lease_id: leaseId })).status;
    }
    expect(status).toBe(404);
    // Within a few seconds of expiry (2 s TTL plus a 1 s sweep interval), not at DynamoDB's TTL.
    expect(Date.now() - started).toBeLessThan(8_000);
  }, 20_000);

  it('stops on SIGTERM to its whole process group: answers what is in flight, exit 0, no error line, no DynamoDB Local left, both ports free', async () => {
    // A kept-alive connection must not hold the stop up.
    await call('GET', '/v1/sys/health');
    // Work in flight when the signal comes: an event stream, a blocking query, expiring leases for the sweep.
    const bootstrap = await fetch(`${first.scheduler}/v1/acl/bootstrap`, { method: 'POST' });
    const management = ((await bootstrap.json()) as { SecretID: string }).SecretID;
    const headers = { 'X-Scheduler-Token': management };
    const stream = await fetch(`${first.scheduler}/v1/event/stream`, { headers });
    expect(stream.status).toBe(200);
    const streamEnded = stream.text().then(
      () => 'ended',
      () => 'cut',
    );
    const blocking = fetch(`${first.scheduler}/v1/acl/policies?index=1000000&wait=60s`, { headers }).then(
      (response) => response.status,
      (error: Error) => `failed: ${error.message}`,
    );
    for (let index = 0; index < 5; index++)
      await call('POST', `/v1/secret/app/expiring${index}`, rootToken, { v: index, ttl: '1s' });
    for (let index = 0; index < 5; index++) await call('GET', `/v1/secret/app/expiring${index}`, rootToken);
    await sleep(1_500); // the leases are due: the sweep is at work when the signal comes
    const outputBefore = first.stdout().length;

    const stopped = Date.now();
    // As a terminal's Ctrl-C or a container stop does: every process of the group gets it, DynamoDB Local too.
    process.kill(-(first.child.pid as number), 'SIGTERM');
    const result = await Promise.race([first.exited, sleep(30_000).then(() => ({ code: -1, signal: null }))]);
    console.log(`npm start stopped ${Date.now() - stopped} ms after SIGTERM to its process group`);
    expect(result, first.stderr()).toEqual({ code: 0, signal: null });
    expect(await blocking).toBe(200); // answered at once, not cut
    expect(['ended', 'cut']).toContain(await streamEnded);
    expect(first.stdout()).toContain('received SIGTERM, stopping');
    const errorLines = [...first.stdout().slice(outputBefore).split('\n'), ...first.stderr().split('\n')].filter(
      (line) =>
        line.trim() !== '' &&
        !line.startsWith('npm warn') &&
        !line.includes('"level":"info"') &&
        !line.includes('received SIGTERM'),
    );
    expect(errorLines).toEqual([]);
    expect(await javaProcessesFor(dataDir)).toEqual([]);
    expect(await portIsFree(secretsPort)).toBe(true);
    expect(await portIsFree(schedulerPort)).toBe(true);
  }, 60_000);

  describe('restarted on the same data directory', () => {
    let second: Started;
    beforeAll(async () => {
      second = await start(env);
    }, START_TIMEOUT_MS + 10_000);
    afterAll(() => {
      killLeftovers();
    });

    it('keeps its data and its root token, and prints no token', async () => {
      expect(second.stdout()).not.toContain(rootToken);
      expect(second.stdout()).toContain('root token:        set when this data directory was first initialised');
      const again = client(second.secrets);
      const read = await again('GET', '/v1/kv/ops/key', rootToken);
      expect(read.status).toBe(200);
      expect(read.body.data).toEqual({ value: 'k' });
      expect((await again('GET', '/v1/sys/policies/acl/app-reader', rootToken)).status).toBe(200);
      expect((await again('GET', '/v1/sys/mounts', rootToken)).body.data['secret/']).toMatchObject({ type: 'kv' });
    });

    it('stops on SIGINT too, even with a client holding a half-sent request', async () => {
      const holder = connect(secretsPort, '127.0.0.1');
      await new Promise((resolve) => holder.once('connect', resolve));
      holder.write('GET /v1/sys/health HTTP/1.1\r\nHost: 127.0.0.1\r\n'); // headers never finished
      holder.on('error', () => {});
      const stopped = Date.now();
      const result = await stopWith(second, 'SIGINT');
      expect(Date.now() - stopped).toBeLessThan(15_000);
      expect(result, second.stderr()).toEqual({ code: 0, signal: null });
      expect(await javaProcessesFor(dataDir)).toEqual([]);
      expect(await portIsFree(secretsPort)).toBe(true);
    }, 40_000);

    it(
      'a signal while DynamoDB Local is starting still stops it',
      async () => {
        const early = launch(env);
        const deadline = Date.now() + START_TIMEOUT_MS;
        while ((await javaProcessesFor(dataDir)).length === 0 && Date.now() < deadline && early.child.exitCode === null)
          await sleep(50);
        early.child.kill('SIGTERM');
        const result = await Promise.race([
          early.exited,
          sleep(START_TIMEOUT_MS).then(() => ({ code: -1, signal: null })),
        ]);
        expect(result, early.stdout() + early.stderr()).toEqual({ code: 0, signal: null });
        expect(await javaProcessesFor(dataDir)).toEqual([]);
        expect(await portIsFree(secretsPort)).toBe(true);
      },
      START_TIMEOUT_MS + 10_000,
    );

    it(
      'refuses a different dev root token for an initialised data directory',
      async () => {
        const wrong = launch({ ...env, KEYHAVEN_DEV_ROOT_TOKEN: 'some-other-root-token' });
        const result = await Promise.race([
          wrong.exited,
          sleep(START_TIMEOUT_MS).then(() => ({ code: -1, signal: null })),
        ]);
        expect(result.code).toBe(1);
        expect(wrong.stderr()).toContain('KEYHAVEN_DEV_ROOT_TOKEN does not match this data directory');
        expect(wrong.stderr()).not.toContain(rootToken);
        expect(await javaProcessesFor(dataDir)).toEqual([]);
        expect(await portIsFree(secretsPort)).toBe(true);
      },
      START_TIMEOUT_MS,
    );
  });
});

describe('npm start with KEYHAVEN_DYNAMODB_ENDPOINT', () => {
  let dataDir: string;
  let started: Started;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'keyhaven-endpoint-'));
    started = await start({
      KEYHAVEN_DATA_DIR: dataDir,
      KEYHAVEN_DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
      KEYHAVEN_TABLE: `npm-start-${randomUUID()}`,
      KEYHAVEN_SECRETS_PORT: String(await freePort()),
      KEYHAVEN_SCHEDULER_PORT: String(await freePort()),
    });
  }, START_TIMEOUT_MS + 10_000);

  afterAll(async () => {
    killLeftovers();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('uses the given endpoint and table, starts no DynamoDB Local, and mints a random root token', async () => {
    expect(await javaProcessesFor(dataDir)).toEqual([]);
    const token = /root token:\s+(hvs\.\S+)/.exec(started.stdout())?.[1];
    expect(token).toBeDefined();
    const call = client(started.secrets);
    expect((await call('GET', '/v1/sys/health')).body).toMatchObject({ initialized: true, sealed: false });
    expect((await call('POST', '/v1/kv/here', token, { v: 1 })).status).toBe(204);
    expect((await call('GET', '/v1/kv/here', token)).body.data).toEqual({ v: 1 });
  });

  it('stops without touching the endpoint it was given', async () => {
    expect(await stopWith(started)).toEqual({ code: 0, signal: null });
    const alive = await fetch(inject('dynamoEndpoint'), { method: 'POST' }).catch(() => undefined);
    expect(alive).toBeDefined();
  }, 40_000);
});
