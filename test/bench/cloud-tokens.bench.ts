/**
 * Cloud engine: access tokens per second from a roleset, end to end through the secrets app (the code a Lambda
 * runs) on DynamoDB Local, against the Google emulator on loopback. The engine caches a minted OAuth2 token
 * until five minutes before it expires (as google-auth-library does), so most reads are served from the
 * cache; the cache-miss figure calls the engine's minting function directly (JWT-bearer grant: RS256
 * signature by google-auth-library, verification by the emulator). Also: key issue+revoke per second (new RSA key in the cloud,
 * lease recorded, lease revoked, key deleted).
 * Run: `PATH=$PWD/node_modules/.bin:$PATH tsx test/bench/cloud-tokens.bench.ts` (ROUNDS=n to change the count).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createCore } from '../../packages/core/src/core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { tokenFromCredentials } from '../../packages/core/src/secrets/engines/cloud/google-client.ts';
import { backendsOf } from '../../packages/core/src/secrets/families.ts';
import { initialize } from '../../packages/core/src/secrets/sys/init.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { localClientConfig, startDynamoDbLocal } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { startGoogleEmulator } from '../emulators/google.ts';

const rounds = Number(process.env.ROUNDS ?? 500);
const keyRounds = Math.max(20, Math.floor(rounds / 10));

const dynamo = await startDynamoDbLocal({});
const google = await startGoogleEmulator();
const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-bench-'));
const client = new DynamoDBClient(localClientConfig(dynamo.endpoint));
try {
  const tableName = `bench-${randomUUID()}`;
  await ensureTable(client, tableName);
  const core = await createCore({
    dynamodb: client,
    tableName,
    keySource: fileKeySource(path.join(keyDir, 'keyring.key')),
    backends: backendsOf(['system', 'cloud']),
    log: silentLogger,
  });
  const rootToken = await initialize(core);
  const app = createSecretsApp({ core: async () => core, clientIp: () => '127.0.0.1' });
  const call = async (method: string, url: string, body?: unknown) => {
    const response = await app.request(url, {
      method,
      headers: { 'X-Secrets-Token': rootToken },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return text ? (JSON.parse(text) as { lease_id: string; data: { token: string } }) : undefined;
  };
  google.addProject('proj-1');
  const root = google.seedServiceAccount('proj-1', 'keyhaven-root');
  await call('POST', '/v1/sys/mounts/cloud', {
    type: 'cloud',
    options: {
      iam_endpoint: google.endpoints.iam,
      iamcredentials_endpoint: google.endpoints.iamCredentials,
      resourcemanager_endpoint: google.endpoints.resourceManager,
      storage_endpoint: google.endpoints.storage,
      sts_endpoint: google.endpoints.sts,
      token_endpoint: google.endpoints.oauth2Token,
    },
  });
  await call('POST', '/v1/cloud/config', { credentials: root.credentials });
  const bindings = 'resource "//cloudresourcemanager.googleapis.com/projects/proj-1" { roles = ["roles/viewer"] }';
  await call('POST', '/v1/cloud/roleset/bench', { project: 'proj-1', bindings, token_scopes: 'https://www.googleapis.com/auth/cloud-platform' });
  await call('POST', '/v1/cloud/roleset/keys', { project: 'proj-1', bindings, secret_type: 'service_account_key' });

  const measure = async (label: string, count: number, round: () => Promise<unknown>, note: string) => {
    for (let i = 0; i < Math.min(20, count); i++) await round();
    const started = performance.now();
    for (let i = 0; i < count; i++) await round();
    const seconds = (performance.now() - started) / 1000;
    console.log(`${label}: ${(count / seconds).toFixed(1)}/s (${count} in ${seconds.toFixed(2)} s, ${((seconds / count) * 1000).toFixed(2)} ms each; ${note})`);
  };

  const tokens = new Set<string>();
  await measure('cloud roleset access tokens (cached)', rounds, async () => tokens.add((await call('GET', '/v1/cloud/roleset/bench/token'))?.data.token ?? ''), 'one client, sequential');
  console.log(`  distinct tokens minted during the cached run: ${tokens.size}`);
  const credentials = JSON.parse(root.credentials);
  await measure(
    'cloud OAuth2 JWT-bearer mint (uncached, the cache-miss path)',
    Math.max(20, Math.floor(rounds / 5)),
    () => tokenFromCredentials(credentials, ['https://www.googleapis.com/auth/cloud-platform'], { iam: '', iamCredentials: '', resourceManager: '', storage: '', sts: '', token: google.endpoints.oauth2Token, retryBaseMs: 1 }),
    'RS256 sign by google-auth-library + emulator verify',
  );
  await measure(
    'cloud key issue+revoke',
    keyRounds,
    async () => {
      const issued = await call('GET', '/v1/cloud/roleset/keys/key?key_algorithm=KEY_ALG_RSA_2048');
      await call('PUT', '/v1/sys/leases/revoke', { lease_id: issued?.lease_id });
    },
    'RSA-2048 key generated by the emulator each round',
  );
  console.log(`  keys left in the cloud besides the root key and the token roleset's key: ${google.keys().length - 2}`);
} finally {
  client.destroy();
  await google.close();
  await dynamo.stop();
  rmSync(keyDir, { recursive: true, force: true });
}
