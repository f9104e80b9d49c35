import path from 'node:path';
import { startLocal } from './runtime.ts';

/** `npm start`: the whole product on this machine. Environment variables are listed in the README. */
const env = process.env;
const runtime = await startLocal({
  dataDir: path.resolve(env.KEYHAVEN_DATA_DIR ?? '.keyhaven'),
  ...(env.KEYHAVEN_DYNAMODB_ENDPOINT ? { dynamoDbEndpoint: env.KEYHAVEN_DYNAMODB_ENDPOINT } : {}),
  secretsPort: Number(env.KEYHAVEN_SECRETS_PORT ?? 8200),
  schedulerPort: Number(env.KEYHAVEN_SCHEDULER_PORT ?? 4646),
  ...(env.KEYHAVEN_DEV_ROOT_TOKEN ? { devRootToken: env.KEYHAVEN_DEV_ROOT_TOKEN } : {}),
});

process.stdout.write(
  [
    '',
    'Keyhaven is running in dev mode.',
    `  secrets service:   ${runtime.secretsUrl}/v1`,
    `  scheduler service: ${runtime.schedulerUrl}/v1`,
    runtime.rootToken
      ? `  root token:        ${runtime.rootToken}   (shown once; keep it)`
      : '  root token:        set when this data directory was first initialised',
    '',
    '',
  ].join('\n'),
);

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`received ${signal}, stopping\n`);
  await runtime.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
