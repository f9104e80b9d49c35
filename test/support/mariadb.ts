import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

/**
 * A private MariaDB server (Debian's `mariadb-server`, installed by `test/support/install-test-deps.sh` with
 * `mariadb-plugin-hashicorp-key-management`) whose InnoDB encryption keys come from a Vault-compatible service through
 * MariaDB's own `hashicorp_key_management` plugin, with every plugin setting at its default but the two it has no
 * default for (the URL of the kv version 2 mount and the token).
 *
 * It runs as a database administrator's server would as far as the plugin sees, with two differences that save
 * seconds and touch nothing the plugin does: the data directory starts empty instead of being filled by
 * `mariadb-install-db` (no grant tables, so `--skip-grant-tables`), and it listens on its own socket only.
 */

const run = promisify(execFile);
const startTimeoutMs = 30_000;

export interface MariaDb {
  /** Runs SQL through the `mariadb` client; its tab-separated output without column names. */
  sql(statements: string): Promise<string>;
  /** Stops the server (a clean shutdown) and starts it again on the same data directory. */
  restart(): Promise<void>;
  /** The data directory, to look at the files InnoDB wrote. */
  dataDir: string;
  /** The server's error log so far. */
  errorLog(): Promise<string>;
  stop(): Promise<void>;
}

export const mariadbInstalled = () => existsSync('/usr/sbin/mariadbd') && existsSync(pluginFile);
const pluginFile = '/usr/lib/mysql/plugin/hashicorp_key_management.so';

export async function startMariaDb(options: { vaultUrl: string; token: string }): Promise<MariaDb> {
  const root = await mkdtemp(path.join(tmpdir(), 'keyhaven-mariadb-'));
  const dataDir = path.join(root, 'data');
  const socket = path.join(root, 'sock');
  const errorLogFile = path.join(root, 'error.log');
  const args = [
    '--no-defaults',
    `--datadir=${dataDir}`,
    `--socket=${socket}`,
    `--pid-file=${path.join(root, 'mariadbd.pid')}`,
    `--log-error=${errorLogFile}`,
    '--skip-networking',
    '--skip-grant-tables',
    '--user=root',
    '--skip-log-bin',
    '--performance-schema=OFF',
    '--innodb-buffer-pool-size=16M',
    '--innodb-log-file-size=4M',
    '--plugin-load-add=hashicorp_key_management',
    `--hashicorp-key-management-vault-url=${options.vaultUrl}`,
    `--hashicorp-key-management-token=${options.token}`,
    '--innodb-encrypt-tables=ON',
    '--innodb-encrypt-log=ON',
  ];
  await run('mkdir', ['-p', dataDir]);
  let server: ChildProcess | undefined;

  const launch = async () => {
    const child = spawn('/usr/sbin/mariadbd', args, { stdio: 'ignore', detached: true });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    server = child;
    const deadline = Date.now() + startTimeoutMs;
    for (;;) {
      if (existsSync(socket)) {
        try {
          await client('SELECT 1');
          return;
        } catch {
          // not accepting yet
        }
      }
      const code = await Promise.race([exited, sleep(100).then(() => 'running' as const)]);
      if (code !== 'running') throw new Error(`mariadbd exited (${code}) before serving:\n${await readLog()}`);
      if (Date.now() > deadline) {
        await shutdown();
        throw new Error(`mariadbd did not serve within ${startTimeoutMs} ms:\n${await readLog()}`);
      }
    }
  };
  const shutdown = async () => {
    const child = server;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(20_000)]);
    if (child.exitCode === null && child.pid) process.kill(-child.pid, 'SIGKILL');
  };
  const readLog = () => readFile(errorLogFile, 'utf8').catch(() => '');
  const client = async (statements: string) => {
    const { stdout } = await run('mariadb', [
      '--no-defaults',
      '-S',
      socket,
      '-uroot',
      '--batch',
      '-N',
      '-e',
      statements,
    ]);
    return stdout;
  };

  await launch();
  return {
    sql: client,
    dataDir,
    errorLog: readLog,
    restart: async () => {
      await shutdown();
      await launch();
    },
    stop: async () => {
      await shutdown();
      await rm(root, { recursive: true, force: true });
    },
  };
}
