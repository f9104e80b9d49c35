import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The product as `npm start` runs it (`tsx packages/local/src/main.ts`, `node_modules/.bin` first on PATH): its own
 * data directory, free ports and a dev root token; every process it starts (DynamoDB Local too) in one group.
 */
export interface Product {
  secretsUrl: string;
  rootToken: string;
  output(): string;
  stop(): Promise<void>;
}

const repo = path.resolve(import.meta.dirname, '../..');

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export async function startProduct(rootToken: string): Promise<Product> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'keyhaven-clients-'));
  const bin = path.join(repo, 'node_modules/.bin');
  const child: ChildProcess = spawn(path.join(bin, 'tsx'), ['packages/local/src/main.ts'], {
    cwd: repo,
    env: {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      KEYHAVEN_DATA_DIR: dataDir,
      KEYHAVEN_SECRETS_PORT: String(await freePort()),
      KEYHAVEN_SCHEDULER_PORT: String(await freePort()),
      KEYHAVEN_DEV_ROOT_TOKEN: rootToken,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const stop = async () => {
    if (!gone && child.pid) process.kill(-child.pid, 'SIGTERM');
    await Promise.race([exited, sleep(30_000)]);
    if (!gone && child.pid) process.kill(-child.pid, 'SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 150_000;
  for (;;) {
    const banner = /secrets service:\s+(\S+)\/v1/.exec(output);
    if (banner) return { secretsUrl: banner[1] as string, rootToken, output: () => output, stop };
    if (gone || Date.now() > deadline) {
      await stop();
      throw new Error(`npm start did not serve:\n${output}`);
    }
    await sleep(100);
  }
}
