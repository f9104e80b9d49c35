/**
 * A small in-process emulator of AWS KMS speaking its JSON 1.1 protocol: `POST /` with
 * `X-Amz-Target: TrentService.<Operation>`, base64 blobs in JSON, errors as HTTP 400 `{"__type", "message"}`.
 * Symmetric keys only: CreateKey, Encrypt, Decrypt, GenerateDataKey. Ciphertext is real AES-256-GCM under a
 * per-key random secret with the canonical encryption context as AAD; the blob names its key in its first bytes.
 */
import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

const ARN_PREFIX = 'arn:aws:kms:us-east-1:000000000000:key/';
const KEY_ID_BYTES = 36; // a UUID
const IV_BYTES = 12;
const TAG_BYTES = 16;

class KmsError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

type Body = Record<string, unknown>;
type EncryptionContext = Record<string, string>;
interface Key {
  id: string;
  arn: string;
  secret: Buffer;
  metadata: Body;
}

export interface KmsEmulator {
  endpoint: string;
  /** Requests received, by operation name (e.g. `GenerateDataKey`). */
  calls: Record<string, number>;
  /** Creates a key without going through HTTP (not counted in `calls`); returns its KeyId. */
  createKey(): Promise<string>;
  stop(): Promise<void>;
}

function optionalString(body: Body, field: string): string | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new KmsError('ValidationException', `${field} must be a string`);
  return value;
}

function requiredString(body: Body, field: string): string {
  const value = optionalString(body, field);
  if (value === undefined) throw new KmsError('ValidationException', `${field} is required`);
  return value;
}

function blob(body: Body, field: string, min: number, max: number): Buffer {
  const bytes = Buffer.from(requiredString(body, field), 'base64');
  if (bytes.length < min || bytes.length > max) {
    throw new KmsError('ValidationException', `${field} must be between ${min} and ${max} bytes`);
  }
  return bytes;
}

function integer(body: Body, field: string, min: number, max: number): number | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
    throw new KmsError('ValidationException', `${field} must be an integer between ${min} and ${max}`);
  }
  return value as number;
}

/** The encryption context as AAD: its pairs sorted by key, so the order the caller wrote them in does not matter. */
function contextAad(body: Body): Buffer {
  const context = body.EncryptionContext ?? {};
  if (typeof context !== 'object' || context === null || Object.values(context).some((v) => typeof v !== 'string')) {
    throw new KmsError('ValidationException', 'EncryptionContext must map strings to strings');
  }
  const pairs = Object.entries(context as EncryptionContext).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Buffer.from(JSON.stringify(pairs));
}

async function readBody(request: IncomingMessage): Promise<Body> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  try {
    const body: unknown = JSON.parse(Buffer.concat(chunks).toString() || '{}');
    if (typeof body === 'object' && body !== null && !Array.isArray(body)) return body as Body;
  } catch {
    // reported below, as the real service does
  }
  throw new KmsError('SerializationException', 'request body is not a JSON object');
}

export async function startKmsEmulator(): Promise<KmsEmulator> {
  const keys = new Map<string, Key>();
  const calls: Record<string, number> = {};

  function createKey(description = ''): Key {
    const id = randomUUID();
    const arn = ARN_PREFIX + id;
    const metadata = {
      AWSAccountId: '000000000000',
      KeyId: id,
      Arn: arn,
      CreationDate: Math.floor(Date.now() / 1000),
      Enabled: true,
      Description: description,
      KeyUsage: 'ENCRYPT_DECRYPT',
      KeyState: 'Enabled',
      Origin: 'AWS_KMS',
      KeyManager: 'CUSTOMER',
      KeySpec: 'SYMMETRIC_DEFAULT',
      EncryptionAlgorithms: ['SYMMETRIC_DEFAULT'],
      MultiRegion: false,
    };
    const key = { id, arn, secret: randomBytes(32), metadata };
    keys.set(id, key);
    return key;
  }

  /** A key by its id or ARN. */
  function findKey(keyId: string): Key {
    const key = keys.get(keyId.startsWith(ARN_PREFIX) ? keyId.slice(ARN_PREFIX.length) : keyId);
    if (!key) throw new KmsError('NotFoundException', `Key '${keyId}' does not exist`);
    return key;
  }

  /** `keyId|iv|ciphertext|tag`. */
  function encrypt(key: Key, plaintext: Buffer, aad: Buffer): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key.secret, iv).setAAD(aad);
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return Buffer.concat([Buffer.from(key.id), iv, ciphertext, cipher.getAuthTag()]);
  }

  function decrypt(blob: Buffer, aad: Buffer): { key: Key; plaintext: Buffer } {
    const key = keys.get(blob.subarray(0, KEY_ID_BYTES).toString());
    if (!key || blob.length <= KEY_ID_BYTES + IV_BYTES + TAG_BYTES) {
      throw new KmsError('InvalidCiphertextException', 'The ciphertext is invalid');
    }
    const iv = blob.subarray(KEY_ID_BYTES, KEY_ID_BYTES + IV_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', key.secret, iv).setAAD(aad);
    decipher.setAuthTag(blob.subarray(blob.length - TAG_BYTES));
    try {
      const ciphertext = blob.subarray(KEY_ID_BYTES + IV_BYTES, blob.length - TAG_BYTES);
      return { key, plaintext: Buffer.concat([decipher.update(ciphertext), decipher.final()]) };
    } catch {
      throw new KmsError('InvalidCiphertextException', 'The ciphertext or its encryption context is invalid');
    }
  }

  const operations: Record<string, (body: Body) => Body> = {
    CreateKey(body) {
      const spec = optionalString(body, 'KeySpec') ?? 'SYMMETRIC_DEFAULT';
      const usage = optionalString(body, 'KeyUsage') ?? 'ENCRYPT_DECRYPT';
      if (spec !== 'SYMMETRIC_DEFAULT' || usage !== 'ENCRYPT_DECRYPT') {
        throw new KmsError('UnsupportedOperationException', 'the emulator supports symmetric encryption keys only');
      }
      return { KeyMetadata: createKey(optionalString(body, 'Description')).metadata };
    },
    Encrypt(body) {
      const key = findKey(requiredString(body, 'KeyId'));
      const ciphertext = encrypt(key, blob(body, 'Plaintext', 1, 4096), contextAad(body));
      return {
        CiphertextBlob: ciphertext.toString('base64'),
        KeyId: key.arn,
        EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
      };
    },
    Decrypt(body) {
      const keyId = optionalString(body, 'KeyId');
      const expected = keyId === undefined ? undefined : findKey(keyId);
      const { key, plaintext } = decrypt(blob(body, 'CiphertextBlob', 1, 6144), contextAad(body));
      if (expected && expected !== key) {
        throw new KmsError(
          'IncorrectKeyException',
          'The KeyId in the request is not the key that encrypted the ciphertext',
        );
      }
      return { KeyId: key.arn, Plaintext: plaintext.toString('base64'), EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
    },
    GenerateDataKey(body) {
      const key = findKey(requiredString(body, 'KeyId'));
      const spec = optionalString(body, 'KeySpec');
      const count = integer(body, 'NumberOfBytes', 1, 1024);
      if ((spec === undefined) === (count === undefined)) {
        throw new KmsError('ValidationException', 'Specify exactly one of KeySpec and NumberOfBytes');
      }
      const bytes = spec === undefined ? count : spec === 'AES_256' ? 32 : spec === 'AES_128' ? 16 : undefined;
      if (bytes === undefined)
        throw new KmsError('ValidationException', `KeySpec must be AES_256 or AES_128, not ${spec}`);
      const plaintext = randomBytes(bytes);
      return {
        CiphertextBlob: encrypt(key, plaintext, contextAad(body)).toString('base64'),
        Plaintext: plaintext.toString('base64'),
        KeyId: key.arn,
      };
    },
  };

  const server = createServer(async (request, response) => {
    let status = 200;
    let payload: Body;
    try {
      const target = /^TrentService\.(\w+)$/.exec(request.headers['x-amz-target']?.toString() ?? '')?.[1];
      const operation = target !== undefined && Object.hasOwn(operations, target) ? operations[target] : undefined;
      if (target) calls[target] = (calls[target] ?? 0) + 1;
      if (request.method !== 'POST' || request.url !== '/' || !operation) {
        throw new KmsError('UnknownOperationException', `Unknown operation ${request.headers['x-amz-target']}`);
      }
      payload = operation(await readBody(request));
    } catch (error) {
      const known = error instanceof KmsError;
      status = known ? 400 : 500;
      payload = {
        __type: known ? error.type : 'KMSInternalException',
        message: error instanceof Error ? error.message : String(error),
      };
    }
    response.writeHead(status, { 'Content-Type': 'application/x-amz-json-1.1' }).end(JSON.stringify(payload));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    createKey: async () => createKey().id,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
