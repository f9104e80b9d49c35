/**
 * Mesh engine: credentials issued and revoked per second, end to end through the secrets app (the code a
 * Lambda runs) on DynamoDB Local, against the Consul emulator on loopback: each round is `GET mesh/creds/web`
 * (token created on the server, lease recorded) then `PUT sys/leases/revoke` (token deleted, lease removed).
 * Run: `node_modules/.bin/tsx test/bench/mesh-creds.bench.ts` (ROUNDS=n to change the count).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createCore } from '../../packages/core/src/core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { backendsOf } from '../../packages/core/src/secrets/families.ts';
import { initialize } from '../../packages/core/src/secrets/sys/init.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { localClientConfig, startDynamoDbLocal } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';
import { startConsulEmulator } from '../emulators/consul.ts';

const rounds = Number(process.env.ROUNDS ?? 300);
const warmup = 20;

const dynamo = await startDynamoDbLocal({});
const consul = await startConsulEmulator();
const keyDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-bench-'));
const client = new DynamoDBClient(localClientConfig(dynamo.endpoint));
try {
  const tableName = `bench-${randomUUID()}`;
  await ensureTable(client, tableName);
  const core = await createCore({
    dynamodb: client,
    tableName,
    keySource: fileKeySource(path.join(keyDir, 'keyring.key')),
    backends: backendsOf(['system', 'mesh']),
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
    return text ? (JSON.parse(text) as { lease_id: string }) : undefined;
  };

  const bootstrap = (await consul.request('PUT', '/v1/acl/bootstrap')).json as { SecretID: string };
  await consul.request('PUT', '/v1/acl/policy', { token: bootstrap.SecretID, body: { Name: 'web-read' } });
  await call('POST', '/v1/sys/mounts/mesh', { type: 'mesh' });
  await call('POST', '/v1/mesh/config/access', { address: consul.address, token: bootstrap.SecretID });
  await call('POST', '/v1/mesh/roles/web', { mesh_policies: 'web-read', service_identities: 'web:dc1', ttl: '1h' });

  const round = async () => {
    const creds = await call('GET', '/v1/mesh/creds/web');
    await call('PUT', '/v1/sys/leases/revoke', { lease_id: creds?.lease_id });
  };
  for (let i = 0; i < warmup; i++) await round();
  const started = performance.now();
  for (let i = 0; i < rounds; i++) await round();
  const seconds = (performance.now() - started) / 1000;
  const left = consul.tokens().length - 1; // the bootstrap token stays
  console.log(
    `mesh creds issue+revoke: ${(rounds / seconds).toFixed(1)}/s (${rounds} rounds in ${seconds.toFixed(2)} s, ` +
      `${((seconds / rounds) * 1000).toFixed(1)} ms each; one client, sequential; ${left} tokens left on the server)`,
  );
} finally {
  client.destroy();
  await consul.close();
  await dynamo.stop();
  rmSync(keyDir, { recursive: true, force: true });
}
