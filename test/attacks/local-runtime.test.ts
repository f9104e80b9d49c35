import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { DynamoDBClient, GetItemCommand, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { freePort, killLeftovers, START_TIMEOUT_MS, type Started, start, stopWith } from '../support/npm-start.ts';

const run = promisify(execFile);

/**
 * `npm start` seen from the network (issue 23 §5). An attacker on the same network (or a web page in the
 * developer's browser, or another local user) reaches DynamoDB Local's port and rewrites a token item's policies
 * with any credentials, or reads the sealed items; DynamoDB Local also sends telemetry home by default. Every
 * listener must bind loopback only, DynamoDB Local must run with telemetry off and answer no foreign origin
 * (CORS), and its data must live under this data directory's own random access key, so a caller without that key
 * sees an empty database. Only this machine's own addresses are ever contacted.
 */

interface Listening {
  address: string;
  port: number;
}

/** The TCP sockets process `pid` listens on, from `ss` (the kernel's view, not the program's claim). */
async function listeningSockets(pid: number): Promise<Listening[]> {
  const { stdout } = await run('ss', ['-ltnpH']);
  return stdout
    .split('\n')
    .filter((line) => line.includes(`pid=${pid},`))
    .map((line) => {
      const local = line.trim().split(/\s+/)[3] as string;
      const cut = local.lastIndexOf(':');
      return { address: local.slice(0, cut).replace(/^\[|\]$/g, ''), port: Number(local.slice(cut + 1)) };
    });
}

const isLoopback = (address: string) => address === '127.0.0.1' || address === '::ffff:127.0.0.1' || address === '::1';

/** Whether a TCP connection to loopback is accepted. No traffic goes to any other address, this machine's own included. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** DynamoDB Local JVMs whose command line names this folder: pid and argv. */
async function dynamoDbLocalFor(folder: string): Promise<{ pid: number; argv: string[] }> {
  const { stdout } = await run('pgrep', ['-f', folder]);
  for (const pid of stdout.split('\n').filter(Boolean).map(Number)) {
    const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean);
    if (argv.some((arg) => arg.endsWith('DynamoDBLocal.jar'))) return { pid, argv };
  }
  throw new Error(`no DynamoDB Local for ${folder}`);
}

describe('npm start from the network: loopback only, no telemetry, no CORS, data under its own key', () => {
  let dataDir: string;
  let started: Started;
  let dynamo: { pid: number; argv: string[]; port: number; endpoint: string };

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'keyhaven-attack-local-'));
    started = await start({
      KEYHAVEN_DATA_DIR: dataDir,
      KEYHAVEN_SECRETS_PORT: String(await freePort()),
      KEYHAVEN_SCHEDULER_PORT: String(await freePort()),
    });
    const jvm = await dynamoDbLocalFor(dataDir);
    const sockets = await listeningSockets(jvm.pid);
    expect(sockets.length).toBe(1);
    const port = sockets[0]?.port as number;
    dynamo = { ...jvm, port, endpoint: `http://127.0.0.1:${port}` };
  }, START_TIMEOUT_MS + 10_000);

  afterAll(async () => {
    if (started) await stopWith(started);
    killLeftovers();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('DynamoDB Local listens on 127.0.0.1 only, so no neighbour on the network can reach it', async () => {
    // The kernel's own list of the process's listening sockets is the proof: each is bound to a loopback address.
    const sockets = await listeningSockets(dynamo.pid);
    expect(sockets.length).toBeGreaterThan(0);
    for (const socket of sockets) expect(isLoopback(socket.address), socket.address).toBe(true);
    expect(await accepts('127.0.0.1', dynamo.port)).toBe(true);
  });

  it('both Keyhaven listeners (secrets, scheduler) listen on 127.0.0.1 only', async () => {
    const ports = [new URL(started.secrets).port, new URL(started.scheduler).port].map(Number);
    const sockets = await listeningSockets(started.child.pid as number);
    expect(sockets.map((socket) => socket.port).sort()).toEqual([...ports].sort());
    for (const socket of sockets) expect(isLoopback(socket.address), `${socket.address}:${socket.port}`).toBe(true);
    for (const port of ports) {
      expect(await accepts('127.0.0.1', port)).toBe(true);
    }
    expect((await fetch(`${started.secrets}/v1/sys/health`)).status).toBe(200);
  });

  it('DynamoDB Local runs with telemetry disabled, through the loopback launcher, without -sharedDb', async () => {
    expect(dynamo.argv).toContain('-disableTelemetry');
    expect(dynamo.argv.some((arg) => arg.endsWith('Launcher.java'))).toBe(true);
    expect(dynamo.argv).toContain('-Dkeyhaven.bindHost=127.0.0.1');
    expect(dynamo.argv).not.toContain('-sharedDb');
    const environment = (await readFile(`/proc/${dynamo.pid}/environ`, 'utf8')).split('\0');
    expect(environment).toContain('DDB_LOCAL_TELEMETRY=0');
  });

  it('a web page from a foreign origin gets no CORS grant from DynamoDB Local (no Access-Control-Allow-Origin, never *)', async () => {
    const origin = 'http://attacker.example';
    const preflight = await fetch(dynamo.endpoint, {
      method: 'OPTIONS',
      headers: {
        Origin: origin,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'x-amz-target,content-type',
      },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const simple = await fetch(dynamo.endpoint, {
      method: 'POST',
      headers: {
        Origin: origin,
        'Content-Type': 'application/x-amz-json-1.0',
        'X-Amz-Target': 'DynamoDB_20120810.ListTables',
        Authorization:
          'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00',
      },
      body: '{}',
    });
    expect(simple.headers.get('access-control-allow-origin')).toBeNull();
    await simple.text();
  });

  it("a local caller without this data directory's access key sees an empty database: no table, no token item", async () => {
    const keyFile = path.join(dataDir, 'dynamodb', 'access-key');
    const owner = JSON.parse(await readFile(keyFile, 'utf8'));
    expect(owner.accessKeyId).toMatch(/^[A-Z0-9]{20}$/);
    const ownerClient = new DynamoDBClient(localClientConfig(dynamo.endpoint, owner));
    // The keys a stranger would try: DynamoDB Local's documented dummy ones, the old shared `local` key.
    const strangers = [
      { accessKeyId: 'local', secretAccessKey: 'local' },
      { accessKeyId: 'fakeMyKeyId', secretAccessKey: 'fakeSecretAccessKey' },
      { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'x' },
    ];
    try {
      expect((await ownerClient.send(new ListTablesCommand({}))).TableNames).toContain('keyhaven');
      for (const credentials of strangers) {
        const stranger = new DynamoDBClient(localClientConfig(dynamo.endpoint, credentials));
        try {
          expect((await stranger.send(new ListTablesCommand({}))).TableNames, credentials.accessKeyId).toEqual([]);
          await expect(
            stranger.send(new GetItemCommand({ TableName: 'keyhaven', Key: { pk: { S: 'sys' }, sk: { S: 'x' } } })),
          ).rejects.toThrow(/non-existent table|not found/i);
        } finally {
          stranger.destroy();
        }
      }
    } finally {
      ownerClient.destroy();
    }
  });
});
