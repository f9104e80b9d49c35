import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { tokenBackend } from '../../packages/core/src/secrets/auth/token/token-backend.ts';
import { initialize } from '../../packages/core/src/secrets/sys/init.ts';
import { systemBackend } from '../../packages/core/src/secrets/sys/system-backend.ts';
import { fileKeySource } from '../../packages/core/src/storage/keyring.ts';
import { localClientConfig } from '../../packages/local/src/dynamodb-local.ts';
import { ensureTable } from '../../packages/local/src/table.ts';

/** In AWS the system function serves `sys/` alone; the stage's declared mounts say what it may enable. */
describe('declared mounts (KEYHAVEN_DECLARED_MOUNTS) in the system function', () => {
  const client = new DynamoDBClient(localClientConfig(inject('dynamoEndpoint')));
  let call: (method: string, url: string, body?: unknown) => Promise<{ status: number; body: { errors?: string[] } }>;

  beforeAll(async () => {
    const tableName = `test-${randomUUID()}`;
    await ensureTable(client, tableName);
    const core = await createCore({
      dynamodb: client,
      tableName,
      keySource: fileKeySource(path.join(mkdtempSync(path.join(tmpdir(), 'keyhaven-key-')), 'keyring.key')),
      backends: [systemBackend, tokenBackend],
      declaredMounts: [
        { path: 'secret/', type: 'kv' },
        { path: 'auth/jwt/', type: 'jwt' },
      ],
      log: silentLogger,
    });
    const root = await initialize(core);
    const app = createSecretsApp({ core: async () => core, clientIp: () => '127.0.0.1' });
    call = async (method, url, body) => {
      const response = await app.request(url, {
        method,
        headers: { 'X-Secrets-Token': root, 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : {} };
    };
  });
  afterAll(() => client.destroy());

  it('enables a declared mount of a family this function does not bundle', async () => {
    expect((await call('POST', '/v1/sys/mounts/secret', { type: 'kv' })).status).toBe(204);
    expect((await call('POST', '/v1/sys/auth/jwt', { type: 'jwt' })).status).toBe(204);
  });

  it('refuses a mount the stage does not route, or a declared path with another type', async () => {
    const undeclared = await call('POST', '/v1/sys/mounts/team-kv', { type: 'kv' });
    expect(undeclared.status).toBe(400);
    expect(undeclared.body.errors?.[0]).toBe(
      'mount "team-kv/" of type kv is not declared for this stage; add it to stacks/stage-config.ts and deploy',
    );
    const wrongType = await call('POST', '/v1/sys/auth/jwt2', { type: 'jwt' });
    expect(wrongType.status).toBe(400);
    expect((await call('GET', '/v1/sys/mounts')).body).toMatchObject({ data: { 'secret/': { type: 'kv' } } });
    expect(Object.keys(((await call('GET', '/v1/sys/mounts')).body as { data: object }).data)).not.toContain(
      'team-kv/',
    );
  });
});
