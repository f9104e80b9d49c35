import { createHash, createHmac, createSecretKey, type Hash, type Hmac, type KeyObject } from 'node:crypto';

/** What the SDK hashes: text, or bytes in any of their forms. */
type SourceData = string | ArrayBuffer | ArrayBufferView;

/**
 * The SHA-256 the AWS SDK signs requests with (SigV4's payload hash and its HMAC chain), on node:crypto like the SDK's
 * own, except that an HMAC key is handed to node as a KeyObject made once per key: given raw bytes, node spends about
 * 8 µs per HMAC checking what kind of key it was given, and the SDK makes several hashes per request. The signing
 * key the SDK derives is cached by the SDK (one object per day, region and service), so its KeyObject is too.
 * Measured on the same DynamoDB Local (issue 28): a GetItem's CPU 262 → 220 µs.
 */
export class KeyedSha256 {
  private hash: Hash | Hmac;

  constructor(private readonly secret?: SourceData) {
    this.hash = this.fresh();
  }

  update(data: SourceData, encoding?: 'utf8' | 'ascii' | 'latin1'): void {
    this.hash.update(typeof data === 'string' ? Buffer.from(data, encoding ?? 'utf8') : bytesOf(data));
  }

  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }

  reset(): void {
    this.hash = this.fresh();
  }

  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', hmacKey(this.secret));
  }
}

const keys = new WeakMap<object, KeyObject>();
/**
 * Keys given as text: SigV4 keys one HMAC of every request with the secret access key itself (the signing-key cache's
 * lookup key). A few are kept, for the credentials in use; rotated ones fall out when more than that arrive.
 */
const textKeys = new Map<string, KeyObject>();
const textKeysKept = 4;

function hmacKey(secret: SourceData): KeyObject {
  if (typeof secret === 'string') {
    let key = textKeys.get(secret);
    if (!key) {
      if (textKeys.size >= textKeysKept) textKeys.clear();
      key = createSecretKey(Buffer.from(secret, 'utf8'));
      textKeys.set(secret, key);
    }
    return key;
  }
  let key = keys.get(secret);
  if (!key) {
    key = createSecretKey(bytesOf(secret));
    keys.set(secret, key);
  }
  return key;
}

function bytesOf(data: ArrayBuffer | ArrayBufferView): Buffer {
  return ArrayBuffer.isView(data)
    ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    : Buffer.from(data as ArrayBuffer);
}
