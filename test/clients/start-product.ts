import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, start, stopWith } from '../support/npm-start.ts';

/**
 * The product as `npm start` runs it (test/support/npm-start.ts): its own data directory, free ports and a dev root
 * token; every process it starts (DynamoDB Local too) in one group.
 */
export interface Product {
  secretsUrl: string;
  rootToken: string;
  output(): string;
  stop(): Promise<void>;
}

export async function startProduct(rootToken: string, environment: Record<string, string> = {}): Promise<Product> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'keyhaven-clients-'));
  const started = await start({
    KEYHAVEN_DATA_DIR: dataDir,
    KEYHAVEN_SECRETS_PORT: String(await freePort()),
    KEYHAVEN_SCHEDULER_PORT: String(await freePort()),
    KEYHAVEN_DEV_ROOT_TOKEN: rootToken,
    ...environment,
  });
  const stop = async () => {
    const { code } = await stopWith(started);
    if (code === -1 && started.child.pid) process.kill(-started.child.pid, 'SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  };
  return { secretsUrl: started.secrets, rootToken, output: () => started.stdout() + started.stderr(), stop };
}
