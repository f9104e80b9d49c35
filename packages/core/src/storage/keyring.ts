/**
 * The sealing keyring for secrets at rest. One 32-byte data key, stored only wrapped (by a local key file or by
 * KMS), yields three independent subkeys: one seals values with AES-256-GCM, one hashes tokens with HMAC-SHA256,
 * one is handed out for self-contained token encryption.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  type KeyObject,
  randomBytes,
  randomUUID,
} from 'node:crypto';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { randomBytes as pooledRandomBytes } from '../lib/random.ts';

/** Where the 32-byte data key comes from and how it is wrapped for storage. */
export interface KeySource {
  readonly kind: 'file' | 'kms';
  generate(): Promise<{ plain: Uint8Array; wrapped: Uint8Array }>;
  unwrap(wrapped: Uint8Array): Promise<Uint8Array>;
}

/**
 * Persists the wrapped data key (implemented by the caller on DynamoDB). putIfAbsent returns false if another process
 * won the race; it is given the keyring the key makes, to sign the item it writes.
 */
export interface WrappedKeyStore {
  get(): Promise<Uint8Array | undefined>;
  putIfAbsent(wrapped: Uint8Array, keyring: Keyring): Promise<boolean>;
}

export class SealError extends Error {
  override name = 'SealError';
}

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const DATA_KEY_PURPOSE = 'keyhaven-data-key';
const SEALED_PREFIX = 'v1:';
const SEALED_BODY = /^[A-Za-z0-9_-]+$/;

/** AES-256-GCM with a random IV; the result is `iv|ciphertext|tag`. */
function encrypt(key: KeyObject | Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Buffer {
  const iv = pooledRandomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(aad);
  return Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
}

/** Reverses {@link encrypt}; throws if the blob is short, tampered with or bound to other AAD. */
function decrypt(key: KeyObject | Uint8Array, blob: Uint8Array, aad: Uint8Array): Buffer {
  if (blob.length < IV_BYTES + TAG_BYTES) throw new Error('ciphertext too short');
  const decipher = createDecipheriv('aes-256-gcm', key, blob.subarray(0, IV_BYTES)).setAAD(aad);
  decipher.setAuthTag(blob.subarray(blob.length - TAG_BYTES));
  return Buffer.concat([decipher.update(blob.subarray(IV_BYTES, blob.length - TAG_BYTES)), decipher.final()]);
}

function subkey(dataKey: Uint8Array, info: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', dataKey, new Uint8Array(0), info, KEY_BYTES));
}

function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}

async function readKeyFile(path: string): Promise<Buffer> {
  const key = await readFile(path);
  if (key.length !== KEY_BYTES) throw new Error(`key file ${path} holds ${key.length} bytes, expected ${KEY_BYTES}`);
  return key;
}

/** Reads the key file, creating it (0600, with parent dirs) if missing. Concurrent creators agree on the first one linked. */
async function loadOrCreateKeyFile(path: string): Promise<Buffer> {
  try {
    return await readKeyFile(path);
  } catch (error) {
    if (!isErrno(error, 'ENOENT')) throw error;
  }
  await mkdir(dirname(path), { recursive: true });
  const temp = `${path}.${randomUUID()}.tmp`;
  await writeFile(temp, randomBytes(KEY_BYTES), { mode: 0o600 });
  try {
    // link() never replaces an existing file and never exposes a partly written one.
    await link(temp, path);
  } catch (error) {
    if (!isErrno(error, 'EEXIST')) throw error;
  } finally {
    await rm(temp, { force: true });
  }
  return readKeyFile(path);
}

/** A local key-encryption key file of 32 random bytes wraps the data key. */
export function fileKeySource(path: string): KeySource {
  let keyFile: Promise<Buffer> | undefined;
  const kek = () => (keyFile ??= loadOrCreateKeyFile(path));
  const aad = Buffer.from(DATA_KEY_PURPOSE);
  return {
    kind: 'file',
    async generate() {
      const plain = randomBytes(KEY_BYTES);
      return { plain, wrapped: encrypt(await kek(), plain, aad) };
    },
    async unwrap(wrapped) {
      const key = await kek();
      try {
        return decrypt(key, wrapped, aad);
      } catch (cause) {
        throw new Error(`the stored data key does not unwrap under key file ${path}`, { cause });
      }
    },
  };
}

/** KMS generates the data key and wraps it under `keyId`, bound to a fixed encryption context. */
export function kmsKeySource(options: { keyId: string; client?: KMSClient }): KeySource {
  const client = options.client ?? new KMSClient({});
  const common = {
    KeyId: options.keyId,
    EncryptionContext: { purpose: DATA_KEY_PURPOSE },
  };
  return {
    kind: 'kms',
    async generate() {
      const { Plaintext, CiphertextBlob } = await client.send(
        new GenerateDataKeyCommand({ ...common, KeySpec: 'AES_256' }),
      );
      if (!Plaintext || !CiphertextBlob) throw new Error('KMS GenerateDataKey returned no key');
      return { plain: Plaintext, wrapped: CiphertextBlob };
    },
    async unwrap(wrapped) {
      const { Plaintext } = await client.send(new DecryptCommand({ ...common, CiphertextBlob: wrapped }));
      if (!Plaintext) throw new Error('KMS Decrypt returned no plaintext');
      return Plaintext;
    },
  };
}

export class Keyring {
  // Held as KeyObjects: Node checks a raw key's type on every cipher and HMAC (an HMAC costs 8× more so).
  readonly #sealKey: KeyObject;
  readonly #hashKey: KeyObject;
  readonly #itemMacKey: KeyObject;
  readonly #digestKey: KeyObject;
  /** 32 bytes for self-contained (batch) token encryption. */
  readonly tokenKey: Uint8Array;
  /** The HMAC key of the JWTs only this service verifies: the scheduler's node introduction tokens and node identities. */
  readonly identityKey: KeyObject;

  private constructor(dataKey: Uint8Array) {
    this.#sealKey = createSecretKey(subkey(dataKey, 'keyhaven seal v1'));
    this.#hashKey = createSecretKey(subkey(dataKey, 'keyhaven hash v1'));
    // Its own subkey: a MAC over stored items must never be computable with the token-hash key (a token's hash is
    // itself stored, so one key for both would let stored values double as MACs).
    this.#itemMacKey = createSecretKey(subkey(dataKey, 'keyhaven item mac v1'));
    // Digests the API shows over content that holds a secret (an auth method's `Hash`): keyed, so a digest is no
    // oracle for guessing the secret offline, and apart from the other keys so it can stand for none of them.
    this.#digestKey = createSecretKey(subkey(dataKey, 'keyhaven content digest v1'));
    this.tokenKey = subkey(dataKey, 'keyhaven token v1');
    this.identityKey = createSecretKey(subkey(dataKey, 'keyhaven scheduler identity v1'));
  }

  /** Reads the wrapped data key, or generates and stores one; if another process stored one first, uses theirs. */
  static async load(source: KeySource, store: WrappedKeyStore): Promise<Keyring> {
    let wrapped = await store.get();
    if (!wrapped) {
      const fresh = await source.generate();
      const keyring = Keyring.fromDataKey(fresh.plain);
      if (await store.putIfAbsent(fresh.wrapped, keyring)) return keyring;
      wrapped = await store.get();
      if (!wrapped) throw new Error('the wrapped data key is missing after another process stored it');
    }
    return Keyring.fromDataKey(await source.unwrap(wrapped));
  }

  static fromDataKey(dataKey: Uint8Array): Keyring {
    if (dataKey.length !== KEY_BYTES) throw new Error(`data key must be ${KEY_BYTES} bytes, got ${dataKey.length}`);
    return new Keyring(dataKey);
  }

  /** AES-256-GCM with `context` bound as AAD: `v1:<base64url iv|ciphertext|tag>`. */
  seal(plaintext: string, context: string): string {
    return SEALED_PREFIX + encrypt(this.#sealKey, Buffer.from(plaintext), Buffer.from(context)).toString('base64url');
  }

  /** Throws {@link SealError} if `sealed` is malformed, tampered with or was sealed under another context. */
  open(sealed: string, context: string): string {
    const body = sealed.slice(SEALED_PREFIX.length);
    if (!sealed.startsWith(SEALED_PREFIX) || !SEALED_BODY.test(body)) throw new SealError('malformed sealed value');
    try {
      return decrypt(this.#sealKey, Buffer.from(body, 'base64url'), Buffer.from(context)).toString();
    } catch {
      throw new SealError('sealed value does not open under this context');
    }
  }

  /** HMAC-SHA256 under the item-MAC subkey, over a canonical encoding of a stored item (see `item-mac.ts`). */
  itemMac(message: string): Buffer {
    return createHmac('sha256', this.#itemMacKey).update(message).digest();
  }

  /** HMAC-SHA256 (base64) under the content-digest subkey: a digest of content that holds a secret, safe to show. */
  contentDigest(message: string): string {
    return createHmac('sha256', this.#digestKey).update(message).digest('base64');
  }

  /** Keyed, deterministic hash (HMAC-SHA256, base64url) for storing and looking up tokens. */
  hash(value: string): string {
    return createHmac('sha256', this.#hashKey).update(value).digest('base64url');
  }
}
