import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KMSClient } from '@aws-sdk/client-kms';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Core, createCore } from '../../packages/core/src/composition/secrets-core.ts';
import { createSecretsApp } from '../../packages/core/src/http/secrets-app.ts';
import { silentLogger } from '../../packages/core/src/lib/log.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { fileKeySource, type KeySource, kmsKeySource } from '../../packages/core/src/storage/keyring.ts';
import { type KmsEmulator, startKmsEmulator } from '../emulators/kms.ts';
import { type SecretsHarness, startSecrets } from '../support/secrets-harness.ts';

/** Another process of the service on the same table: its own core, its own app, the same wrapped data key. */
function secondCore(h: SecretsHarness, keySource: KeySource): Promise<Core> {
  return createCore({
    dynamodb: h.client,
    tableName: h.tableName,
    keySource,
    backends: backendsOf(allSecretsFamilies),
    clock: h.clock,
    log: silentLogger,
  });
}

async function callThrough(core: Core, method: string, url: string, token: string) {
  const app = createSecretsApp({ core: async () => core, clientIp: () => '127.0.0.1' });
  const response = await app.request(url, { method, headers: { 'X-Secrets-Token': token } });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function rawTable(h: SecretsHarness): Promise<Record<string, unknown>[]> {
  return h.core.store.scan();
}

describe('sealing under a KMS-wrapped data key', () => {
  let kms: KmsEmulator;
  let client: KMSClient;
  let keyId: string;
  let h: SecretsHarness;
  beforeEach(async () => {
    kms = await startKmsEmulator();
    client = new KMSClient({
      endpoint: kms.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    keyId = await kms.createKey();
    h = await startSecrets({ keySource: kmsKeySource({ keyId, client }) });
  });
  afterEach(async () => {
    await h.close();
    client.destroy();
    await kms.stop();
  });

  it('serves requests on a data key that KMS generated once and that only KMS can unwrap', async () => {
    expect(kms.calls).toEqual({ GenerateDataKey: 1 });
    const password = `pw-${randomUUID()}`;
    expect((await h.call('POST', '/v1/secret/app/db', { token: h.rootToken, body: { password } })).status).toBe(204);
    expect((await h.call('GET', '/v1/secret/app/db', { token: h.rootToken })).body.data).toEqual({ password });

    const items = await rawTable(h);
    expect(JSON.stringify(items)).not.toContain(password);
    expect(JSON.stringify(items)).not.toContain(h.rootToken);
    const keyring = items.find((item) => item.pk === 'sys' && item.sk === 'keyring');
    expect(keyring?.wrapped).toBeInstanceOf(Uint8Array);
    // The stored blob is KMS ciphertext: it names the KMS key it is wrapped under.
    expect(
      Buffer.from(keyring?.wrapped as Uint8Array)
        .subarray(0, 36)
        .toString(),
    ).toBe(keyId);
    expect(kms.calls).toEqual({ GenerateDataKey: 1 });
  });

  it('lets a second core on the same table unwrap the key with Decrypt and open what the first sealed', async () => {
    const password = `pw-${randomUUID()}`;
    await h.call('POST', '/v1/secret/app/db', { token: h.rootToken, body: { password } });

    const second = await secondCore(h, kmsKeySource({ keyId, client }));
    expect(kms.calls).toEqual({ GenerateDataKey: 1, Decrypt: 1 });
    const read = await callThrough(second, 'GET', '/v1/secret/app/db', h.rootToken);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual({ password });
    expect(kms.calls).toEqual({ GenerateDataKey: 1, Decrypt: 1 });
  });

  it('refuses to start on a key KMS will not unwrap with the configured key', async () => {
    const otherKey = await kms.createKey();
    await expect(secondCore(h, kmsKeySource({ keyId: otherKey, client }))).rejects.toThrow(
      /not the key that encrypted/,
    );
    expect(kms.calls.GenerateDataKey).toBe(1);
  });
});

describe('sealing under a local key file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'keyhaven-sealing-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('creates the key file 0600 on first start and reads the same data key on the next', async () => {
    const keyFile = path.join(dir, 'nested', 'keyring.key');
    const h = await startSecrets({ keySource: fileKeySource(keyFile) });
    try {
      const stat = statSync(keyFile);
      expect(stat.mode & 0o777).toBe(0o600);
      expect(stat.size).toBe(32);
      await h.call('POST', '/v1/secret/app', { token: h.rootToken, body: { password: 'local-pw' } });

      const restarted = await secondCore(h, fileKeySource(keyFile));
      expect((await callThrough(restarted, 'GET', '/v1/secret/app', h.rootToken)).body.data).toEqual({
        password: 'local-pw',
      });

      await expect(secondCore(h, fileKeySource(path.join(dir, 'other.key')))).rejects.toThrow(/does not unwrap/);
    } finally {
      await h.close();
    }
  });
});
