/**
 * `rsadecrypt(ciphertext, privatekey)` as go-cty-funcs' crypto.RsaDecryptFunc answers it in Nomad (and Terraform):
 * the ciphertext standard base64, the key the first PEM block of the text (`encoding/pem`'s rules), not
 * password-protected, a PKCS #1 RSAPrivateKey, and the plaintext recovered by PKCS #1 v1.5 (`rsa.DecryptPKCS1v15`).
 *
 * Node refuses `privateDecrypt` with PKCS #1 v1.5 padding since CVE-2023-46809 (the Marvin timing attack: a server
 * that decrypts with its own key for anyone becomes a padding oracle). The process keeps that refusal: this file
 * asks OpenSSL for the raw RSA operation (`RSA_NO_PADDING`, blinded) and checks the padding itself, without a
 * branch on the secret bytes, and every failure of the operation or of the padding is the one vague error Go gives.
 * There is no oracle to protect here anyway: the key is the caller's own, sent in the same request, and the
 * plaintext goes back to that caller; the server holds no key an answer could reveal anything about.
 */
import { constants, createPrivateKey, type JsonWebKey, type KeyObject, privateDecrypt } from 'node:crypto';
import { readOncePerParse, spendCryptoWork } from './hcl-crypto-allowance.ts';
import { HclEvalError, HclLimitError } from './hcl-values.ts';

const decryptionError = 'crypto/rsa: decryption error';
/** The largest RSA key read (Go has no limit): a 16,384-bit decryption costs about 50 ms; 8,192 bits is the most in use. */
export const maxKeyBits = 16_384;
/** A 16,384-bit PKCS #1 key is about 9,300 bytes of DER; anything much larger is refused before it is parsed. */
const maxKeyDerBytes = 10_240;

interface PemBlock {
  type: string;
  headers: Map<string, string>;
  bytes: Buffer;
}

/** Go's `base64.StdEncoding.DecodeString`: padding required, `\r` and `\n` skipped, nothing else taken. */
function decodeStdBase64(text: string): Buffer | null {
  const clean = text.replace(/[\r\n]/g, '');
  if (clean.length % 4 !== 0 || !/^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(clean)) return null;
  return Buffer.from(clean, 'base64');
}

/** A line without its end-of-line, trailing spaces, tabs and carriage returns; and what follows it. */
function line(text: string): [string, string] {
  const end = text.indexOf('\n');
  const [head, rest] = end === -1 ? [text, ''] : [text.slice(0, end), text.slice(end + 1)];
  return [head.replace(/[ \t\r]+$/, ''), rest];
}

/** The first well-formed PEM block of the text (`pem.Decode`): text before and between blocks is skipped. */
function decodePem(text: string): PemBlock | null {
  let from = 0;
  for (;;) {
    const at = text.startsWith('-----BEGIN ', from) ? from : text.indexOf('\n-----BEGIN ', from);
    if (at === -1) return null;
    const begin = at === from && text.startsWith('-----BEGIN ', from) ? at : at + 1;
    from = begin + 11;
    const [typeLine, afterType] = line(text.slice(begin + 11));
    if (!typeLine.endsWith('-----')) continue;
    const type = typeLine.slice(0, -5);
    const headers = new Map<string, string>();
    let rest = afterType;
    while (rest !== '') {
      const [header, next] = line(rest);
      const colon = header.indexOf(':');
      if (colon === -1) break;
      headers.set(header.slice(0, colon).trim(), header.slice(colon + 1).trim());
      rest = next;
    }
    let body: string;
    let trailer: string;
    if (headers.size === 0 && rest.startsWith('-----END ')) {
      body = '';
      trailer = rest.slice(9);
    } else {
      const end = rest.indexOf('\n-----END ');
      if (end === -1) continue;
      body = rest.slice(0, end);
      trailer = rest.slice(end + 10);
    }
    const [endLine] = line(trailer);
    if (endLine !== `${type}-----`) continue;
    const bytes = decodeStdBase64(body.replace(/[ \t\r\n]/g, ''));
    if (bytes) return { type, headers, bytes };
  }
}

/** A DER element's header at `at`: its tag, where its value starts and its length (null if it runs past the end). */
function derElement(der: Buffer, at: number): { tag: number; start: number; length: number } | null {
  const tag = der[at];
  let length = der[at + 1];
  if (tag === undefined || length === undefined) return null;
  let start = at + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4) return null;
    length = 0;
    for (let index = 0; index < count; index++) length = length * 256 + (der[start + index] ?? 0);
    start += count;
  }
  return start + length > der.length ? null : { tag, start, length };
}

/**
 * The modulus size of an RSAPrivateKey read from its DER (SEQUENCE { version, modulus, … }), before OpenSSL sees
 * it: OpenSSL reads larger keys than it will work with (over 16,384 bits it leaves an error behind that fails the
 * next key read), so those are refused first. 0 when the DER is not shaped so; the parse then refuses it.
 */
function modulusBits(der: Buffer): number {
  const sequence = derElement(der, 0);
  const version = sequence?.tag === 0x30 ? derElement(der, sequence.start) : null;
  const modulus = version?.tag === 0x02 ? derElement(der, version.start + version.length) : null;
  if (modulus?.tag !== 0x02) return 0;
  let start = modulus.start;
  const end = modulus.start + modulus.length;
  while (start < end && der[start] === 0) start++;
  return start === end ? 0 : (end - start - 1) * 8 + (der[start] as number).toString(2).length;
}

/** The key re-encoded as `type` DER, or null when OpenSSL cannot write it so. */
function encoded(key: KeyObject | null, type: 'pkcs1' | 'pkcs8'): Buffer | null {
  try {
    return key ? key.export({ format: 'der', type }) : null;
  } catch {
    return null;
  }
}

/**
 * `x509.ParsePKCS1PrivateKey`, with Go's hints when the DER is another kind of key. OpenSSL's decoders are lenient
 * (its 'pkcs1' reader takes a PKCS #8 key, its 'sec1' one an RSA key), so a reading counts only when it re-encodes
 * to exactly the bytes given, as Go's strict DER parser would have read them.
 */
function parsePkcs1(der: Buffer): KeyObject {
  const attempt = (type: 'pkcs1' | 'pkcs8' | 'sec1') => {
    try {
      return createPrivateKey({ key: der, format: 'der', type });
    } catch {
      return null;
    }
  };
  const key = attempt('pkcs1');
  const asPkcs1 = key?.asymmetricKeyType === 'rsa' ? encoded(key, 'pkcs1') : null;
  if (key && asPkcs1?.equals(der)) return key;
  if (asPkcs1 && der.length > asPkcs1.length && der.subarray(0, asPkcs1.length).equals(asPkcs1))
    throw new HclEvalError('Invalid key', 'asn1: syntax error: trailing data');
  if (encoded(attempt('pkcs8'), 'pkcs8')?.equals(der))
    throw new HclEvalError(
      'Invalid key',
      'x509: failed to parse private key (use ParsePKCS8PrivateKey instead for this key format)',
    );
  if (attempt('sec1')?.asymmetricKeyType === 'ec')
    throw new HclEvalError(
      'Invalid key',
      'x509: failed to parse private key (use ParseECPrivateKey instead for this key format)',
    );
  throw new HclEvalError('Invalid key', 'asn1: structure error: the key is not a PKCS #1 RSAPrivateKey');
}

const big = (field: string | undefined) => BigInt(`0x${Buffer.from(field ?? '', 'base64url').toString('hex') || '0'}`);

/** Go refuses a key whose parts disagree (`rsa.PrivateKey.Validate`); OpenSSL would compute garbage with one. */
function checkConsistent(key: KeyObject): void {
  let jwk: JsonWebKey;
  try {
    jwk = key.export({ format: 'jwk' });
  } catch {
    return; // a multi-prime key, which JWK cannot hold: OpenSSL checks its parts as it uses them
  }
  const [n, e, p, q, dp, dq, qi] = [
    big(jwk.n),
    big(jwk.e),
    big(jwk.p),
    big(jwk.q),
    big(jwk.dp),
    big(jwk.dq),
    big(jwk.qi),
  ];
  const [one, zero] = [BigInt(1), BigInt(0)];
  if (n === zero || e === zero)
    throw new HclEvalError('Invalid key', 'x509: private key contains zero or negative value');
  if (p <= one || q <= one) throw new HclEvalError('Invalid key', 'crypto/rsa: prime factor is <= 1');
  if (p * q !== n) throw new HclEvalError('Invalid key', 'crypto/rsa: invalid modulus');
  if ((e * dp) % (p - one) !== one % (p - one) || (e * dq) % (q - one) !== one % (q - one))
    throw new HclEvalError('Invalid key', 'crypto/rsa: invalid CRT exponent');
  if ((q * qi) % p !== one) throw new HclEvalError('Invalid key', 'crypto/rsa: invalid CRT coefficient');
}

/** PKCS #1 v1.5 type 2 unpadding without a branch on the bytes: 0x00 0x02, ≥ 8 non-zero bytes, 0x00, message. */
function unpad(em: Buffer): Buffer | null {
  let valid = (em[0] === 0 ? 1 : 0) & (em[1] === 2 ? 1 : 0);
  let looking = 1;
  let index = 0;
  for (let i = 2; i < em.length; i++) {
    const isZero = em[i] === 0 ? 1 : 0;
    const take = looking & isZero;
    index = take * i + (1 - take) * index;
    looking &= 1 - isZero;
  }
  valid &= (1 - looking) & (index >= 10 ? 1 : 0);
  return valid === 1 ? em.subarray(index + 1) : null;
}

export function rsaDecrypt(ciphertext: string, privateKey: string): string {
  const encrypted = decodeStdBase64(ciphertext);
  if (!encrypted)
    throw new HclEvalError(
      'Invalid ciphertext',
      `failed to decode input ${JSON.stringify(ciphertext)}: cipher text must be base64-encoded`,
    );
  const block = decodePem(privateKey);
  if (!block) throw new HclEvalError('Invalid key', 'failed to parse key: no key found');
  if (block.headers.get('Proc-Type') === '4,ENCRYPTED')
    throw new HclEvalError(
      'Invalid key',
      'failed to parse key: password protected keys are not supported. Please decrypt the key prior to use',
    );
  spendCryptoWork(1, 'rsadecrypt');
  if (block.bytes.length > maxKeyDerBytes)
    throw new HclLimitError(
      `rsadecrypt refuses a key of ${block.bytes.length} bytes: at most ${maxKeyDerBytes} are read (an RSA key of ${maxKeyBits} bits; docs/security.md)`,
    );
  if (modulusBits(block.bytes) > maxKeyBits)
    throw new HclLimitError(
      `rsadecrypt refuses a ${modulusBits(block.bytes)}-bit key: at most ${maxKeyBits} bits (docs/security.md)`,
    );
  const { key, bits } = readOncePerParse(block.bytes, () => {
    const read = parsePkcs1(block.bytes);
    checkConsistent(read);
    return { key: read, bits: read.asymmetricKeyDetails?.modulusLength ?? 0 };
  });
  spendCryptoWork(Math.ceil(2 * (bits / 4096) ** 3), `rsadecrypt with a ${bits}-bit key`);
  if (bits < 1024)
    throw new HclEvalError(
      'Insecure key',
      `crypto/rsa: ${bits}-bit keys are insecure (see https://go.dev/pkg/crypto/rsa#hdr-Minimum_key_size)`,
    );
  const size = Math.ceil(bits / 8);
  if (encrypted.length > size) throw new HclEvalError('Decryption failed', decryptionError);
  const padded = Buffer.concat([Buffer.alloc(size - encrypted.length), encrypted]);
  let em: Buffer;
  try {
    em = privateDecrypt({ key, padding: constants.RSA_NO_PADDING }, padded);
  } catch {
    throw new HclEvalError('Decryption failed', decryptionError);
  }
  const message = em.length === size ? unpad(em) : null;
  if (!message) throw new HclEvalError('Decryption failed', decryptionError);
  // cty holds strings as NFC-normalised UTF-8; bytes that are not UTF-8 come back as U+FFFD, as Go's JSON gives them.
  return message.toString('utf8').normalize('NFC');
}
