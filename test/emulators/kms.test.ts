import {
  CreateKeyCommand,
  DecryptCommand,
  EncryptCommand,
  GenerateDataKeyCommand,
  type GenerateDataKeyCommandInput,
  KMSClient,
} from '@aws-sdk/client-kms';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Keyring, kmsKeySource, type WrappedKeyStore } from '../../packages/core/src/storage/keyring.ts';
import { type KmsEmulator, startKmsEmulator } from './kms.ts';

let kms: KmsEmulator;
let client: KMSClient;
beforeEach(async () => {
  kms = await startKmsEmulator();
  client = new KMSClient({
    endpoint: kms.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
});
afterEach(async () => {
  client.destroy();
  await kms.stop();
});

const text = (value: string) => new TextEncoder().encode(value);
const errorName = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: Error) => error.name,
  );

describe('KMS emulator', () => {
  it('creates a symmetric key', async () => {
    const { KeyMetadata } = await client.send(new CreateKeyCommand({ Description: 'test key' }));
    expect(KeyMetadata?.KeyId).toMatch(/^[0-9a-f-]{36}$/);
    expect(KeyMetadata?.Arn).toBe(`arn:aws:kms:us-east-1:000000000000:key/${KeyMetadata?.KeyId}`);
    expect(KeyMetadata).toMatchObject({
      Description: 'test key',
      Enabled: true,
      KeyState: 'Enabled',
      KeySpec: 'SYMMETRIC_DEFAULT',
      KeyUsage: 'ENCRYPT_DECRYPT',
    });
    expect(KeyMetadata?.CreationDate).toBeInstanceOf(Date);
    expect(Math.abs(Date.now() - (KeyMetadata?.CreationDate?.getTime() ?? 0))).toBeLessThan(5_000);
    expect(kms.calls).toEqual({ CreateKey: 1 });
  });

  it('round-trips Encrypt and Decrypt, by key id or ARN, with the context in any order', async () => {
    const keyId = await kms.createKey();
    const encrypted = await client.send(
      new EncryptCommand({ KeyId: keyId, Plaintext: text('hello kms'), EncryptionContext: { a: '1', b: '2' } }),
    );
    expect(encrypted.KeyId).toBe(`arn:aws:kms:us-east-1:000000000000:key/${keyId}`);
    expect(Buffer.from(encrypted.CiphertextBlob!).includes('hello kms')).toBe(false);

    const withoutKeyId = await client.send(
      new DecryptCommand({ CiphertextBlob: encrypted.CiphertextBlob, EncryptionContext: { b: '2', a: '1' } }),
    );
    expect(new TextDecoder().decode(withoutKeyId.Plaintext)).toBe('hello kms');
    expect(withoutKeyId.KeyId).toBe(encrypted.KeyId);

    const byArn = await client.send(
      new DecryptCommand({
        KeyId: encrypted.KeyId,
        CiphertextBlob: encrypted.CiphertextBlob,
        EncryptionContext: { a: '1', b: '2' },
      }),
    );
    expect(new TextDecoder().decode(byArn.Plaintext)).toBe('hello kms');
    expect(kms.calls).toEqual({ Encrypt: 1, Decrypt: 2 });
  });

  it('refuses a mismatched encryption context', async () => {
    const keyId = await kms.createKey();
    const { CiphertextBlob } = await client.send(
      new EncryptCommand({ KeyId: keyId, Plaintext: text('x'), EncryptionContext: { tenant: 'a' } }),
    );
    const decrypt = (EncryptionContext?: Record<string, string>) =>
      errorName(client.send(new DecryptCommand({ CiphertextBlob, EncryptionContext })));
    expect(await decrypt({ tenant: 'b' })).toBe('InvalidCiphertextException');
    expect(await decrypt()).toBe('InvalidCiphertextException');
    expect(await decrypt({ tenant: 'a', extra: '1' })).toBe('InvalidCiphertextException');
  });

  it('refuses a tampered ciphertext', async () => {
    const keyId = await kms.createKey();
    const { CiphertextBlob } = await client.send(new EncryptCommand({ KeyId: keyId, Plaintext: text('x') }));
    const tampered = Uint8Array.from(CiphertextBlob!);
    tampered[tampered.length - 1]! ^= 1;
    expect(await errorName(client.send(new DecryptCommand({ CiphertextBlob: tampered })))).toBe(
      'InvalidCiphertextException',
    );
    expect(await errorName(client.send(new DecryptCommand({ CiphertextBlob: text('garbage') })))).toBe(
      'InvalidCiphertextException',
    );
  });

  it('refuses a KeyId other than the one that encrypted', async () => {
    const [keyId, otherKeyId] = [await kms.createKey(), await kms.createKey()];
    const { CiphertextBlob } = await client.send(new EncryptCommand({ KeyId: keyId, Plaintext: text('x') }));
    const error = await client.send(new DecryptCommand({ KeyId: otherKeyId, CiphertextBlob })).catch((e: Error) => e);
    expect(error).toMatchObject({ name: 'IncorrectKeyException', $metadata: { httpStatusCode: 400 } });
  });

  it('reports an unknown key as NotFoundException', async () => {
    const error = await client
      .send(new EncryptCommand({ KeyId: '00000000-0000-0000-0000-000000000000', Plaintext: text('x') }))
      .catch((e: Error) => e);
    expect(error).toMatchObject({
      name: 'NotFoundException',
      message: "Key '00000000-0000-0000-0000-000000000000' does not exist",
      $metadata: { httpStatusCode: 400 },
    });
  });

  it('validates Encrypt plaintext size', async () => {
    const keyId = await kms.createKey();
    const encrypt = (size: number) =>
      errorName(client.send(new EncryptCommand({ KeyId: keyId, Plaintext: new Uint8Array(size) })));
    expect(await encrypt(4096)).toBe('resolved');
    expect(await encrypt(4097)).toBe('ValidationException');
  });

  it('generates data keys by KeySpec or NumberOfBytes, exactly one of them', async () => {
    const keyId = await kms.createKey();
    const generate = (input: Omit<GenerateDataKeyCommandInput, 'KeyId'>) =>
      client.send(new GenerateDataKeyCommand({ KeyId: keyId, ...input }));

    const aes256 = await generate({ KeySpec: 'AES_256', EncryptionContext: { purpose: 'test' } });
    expect(aes256.Plaintext).toHaveLength(32);
    expect(aes256.KeyId).toBe(`arn:aws:kms:us-east-1:000000000000:key/${keyId}`);
    const decrypted = await client.send(
      new DecryptCommand({ CiphertextBlob: aes256.CiphertextBlob, EncryptionContext: { purpose: 'test' } }),
    );
    expect(decrypted.Plaintext).toEqual(aes256.Plaintext);

    expect((await generate({ KeySpec: 'AES_128' })).Plaintext).toHaveLength(16);
    expect((await generate({ NumberOfBytes: 1024 })).Plaintext).toHaveLength(1024);
    expect(await errorName(generate({}))).toBe('ValidationException');
    expect(await errorName(generate({ KeySpec: 'AES_256', NumberOfBytes: 32 }))).toBe('ValidationException');
    expect(await errorName(generate({ NumberOfBytes: 1025 }))).toBe('ValidationException');
    expect(await errorName(generate({ NumberOfBytes: 0 }))).toBe('ValidationException');
  });

  it('answers an unknown target with UnknownOperationException over the raw protocol', async () => {
    const response = await fetch(kms.endpoint, {
      method: 'POST',
      headers: { 'X-Amz-Target': 'TrentService.ScheduleKeyDeletion', 'Content-Type': 'application/x-amz-json-1.1' },
      body: '{}',
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/x-amz-json-1.1');
    expect(await response.json()).toEqual({
      __type: 'UnknownOperationException',
      message: 'Unknown operation TrentService.ScheduleKeyDeletion',
    });
  });
});

describe('Keyring on KMS', () => {
  function memoryStore(): WrappedKeyStore {
    let stored: Uint8Array | undefined;
    return {
      get: async () => stored,
      putIfAbsent: async (wrapped) => {
        if (stored) return false;
        stored = wrapped;
        return true;
      },
    };
  }

  it('generates the data key once and unwraps it with Decrypt on the next load', async () => {
    const keyId = await kms.createKey();
    const store = memoryStore();

    const first = await Keyring.load(kmsKeySource({ keyId, client }), store);
    expect(kms.calls).toEqual({ GenerateDataKey: 1 });

    const second = await Keyring.load(kmsKeySource({ keyId, client }), store);
    expect(kms.calls).toEqual({ GenerateDataKey: 1, Decrypt: 1 });
    expect(second.hash('token')).toBe(first.hash('token'));
    expect(second.open(first.seal('value', 'ctx'), 'ctx')).toBe('value');

    const wrapped = await store.get();
    expect(await errorName(client.send(new DecryptCommand({ CiphertextBlob: wrapped })))).toBe(
      'InvalidCiphertextException',
    );
  });

  it('fails to load under a key that did not wrap the data key', async () => {
    const store = memoryStore();
    await Keyring.load(kmsKeySource({ keyId: await kms.createKey(), client }), store);
    const other = kmsKeySource({ keyId: await kms.createKey(), client });
    await expect(Keyring.load(other, store)).rejects.toMatchObject({ name: 'IncorrectKeyException' });
  });
});
