import path from 'node:path';
import { operatorHostsFromEnvironment } from './host-check.ts';
import { type LocalRuntime, startLocal } from './start-local.ts';

/** `npm start`: the whole product on this machine. Environment variables are listed in the README. */
const env = process.env;

// Listen for signals before starting: a Ctrl-C while DynamoDB Local boots must still stop it, not orphan it.
let runtime: LocalRuntime | undefined;
let stopping: string | undefined;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = signal;
  if (!runtime) return; // still starting: stopped as soon as the start completes
  process.stdout.write(`received ${signal}, stopping\n`);
  try {
    await runtime.stop();
    process.exit(0);
  } catch (error) {
    process.stderr.write(
      `keyhaven: failed to stop cleanly: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  }
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));

try {
  runtime = await startLocal({
    dataDir: path.resolve(env.KEYHAVEN_DATA_DIR || '.keyhaven'),
    ...(env.KEYHAVEN_DYNAMODB_ENDPOINT ? { dynamoDbEndpoint: env.KEYHAVEN_DYNAMODB_ENDPOINT } : {}),
    ...(env.KEYHAVEN_TABLE ? { tableName: env.KEYHAVEN_TABLE } : {}),
    secretsPort: port('KEYHAVEN_SECRETS_PORT', 8200),
    schedulerPort: port('KEYHAVEN_SCHEDULER_PORT', 4646),
    // Both listeners answer this machine only unless the operator names another address (e.g. 0.0.0.0).
    ...(env.KEYHAVEN_HOST ? { host: env.KEYHAVEN_HOST } : {}),
    // The names a browser may reach them by besides the loopback ones (DNS rebinding finds no other: host-check.ts).
    allowedHosts: operatorHostsFromEnvironment(env),
    ...(env.KEYHAVEN_DEV_ROOT_TOKEN ? { devRootToken: env.KEYHAVEN_DEV_ROOT_TOKEN } : {}),
  });
} catch (error) {
  process.stderr.write(`keyhaven: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

if (stopping) {
  const signal = stopping;
  stopping = undefined;
  await stop(signal);
} else {
  process.stdout.write(
    [
      '',
      'Keyhaven is running in dev mode.',
      `  secrets service:   ${runtime.secretsUrl}/v1`,
      `  scheduler service: ${runtime.schedulerUrl}/v1`,
      `  web console:       ${runtime.secretsUrl}/ui/`,
      runtime.rootToken
        ? `  root token:        ${runtime.rootToken}   (shown once; keep it)`
        : '  root token:        set when this data directory was first initialised',
      '',
      '',
    ].join('\n'),
  );
}

function port(name: string, fallback: number): number {
  const text = env[name];
  if (!text) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0 || value > 65_535) {
    process.stderr.write(`keyhaven: ${name} must be a port number, got "${text}"\n`);
    process.exit(1);
  }
  return value;
}
