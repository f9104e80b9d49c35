/**
 * A throwaway certificate authority for TLS tests: EC P-256 keys from node:crypto and X.509 v3 certificates
 * written as DER by hand. node:crypto reads certificates (`X509Certificate`) but cannot issue them, and no
 * package in the tree does; the subset needed here (one CA, leaf certificates with SANs and key usages) is
 * small. Generating a P-256 key takes well under a millisecond, so each test can have its own CA.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { isIPv4 } from 'node:net';

export interface PemPair {
  /** The certificate, PEM. */
  cert: string;
  /** Its private key, PKCS#8 PEM. */
  key: string;
}

export interface TestCa extends PemPair {
  /** A leaf certificate signed by this CA. */
  issue(options: LeafOptions): PemPair;
}

export interface LeafOptions {
  commonName: string;
  /** `server` (serverAuth, with SANs) or `client` (clientAuth). */
  usage: 'server' | 'client';
  /** Subject alternative names: IPv4 addresses and DNS names. Default `127.0.0.1` and `localhost`. */
  altNames?: string[];
}

export function createTestCa(commonName = 'Keyhaven Test CA'): TestCa {
  const caKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const caKeyId = keyIdentifier(caKeys.publicKey);
  const caCert = certificate({
    subject: commonName,
    issuer: commonName,
    publicKey: caKeys.publicKey,
    signingKey: caKeys.privateKey,
    extensions: [
      extension(oids.basicConstraints, seq(bool(true)), true),
      extension(oids.keyUsage, bitString(Buffer.from([0x86]), 1), true), // digitalSignature, keyCertSign, cRLSign
      extension(oids.subjectKeyIdentifier, octets(caKeyId)),
    ],
  });
  return {
    cert: pem('CERTIFICATE', caCert),
    key: caKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    issue({ commonName: leafName, usage, altNames = ['127.0.0.1', 'localhost'] }) {
      const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const extensions = [
        extension(oids.basicConstraints, seq(), true),
        extension(oids.keyUsage, bitString(Buffer.from([0x80]), 7), true), // digitalSignature
        extension(oids.extKeyUsage, seq(oid(usage === 'server' ? oids.serverAuth : oids.clientAuth))),
        extension(oids.subjectKeyIdentifier, octets(keyIdentifier(keys.publicKey))),
        extension(oids.authorityKeyIdentifier, seq(tlv(0x80, caKeyId))),
      ];
      if (altNames.length > 0) extensions.push(extension(oids.subjectAltName, seq(...altNames.map(generalName))));
      const der = certificate({
        subject: leafName,
        issuer: commonName,
        publicKey: keys.publicKey,
        signingKey: caKeys.privateKey,
        extensions,
      });
      return { cert: pem('CERTIFICATE', der), key: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
    },
  };
}

const oids = {
  commonName: '2.5.4.3',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyIdentifier: '2.5.29.14',
  authorityKeyIdentifier: '2.5.29.35',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
};

function certificate(options: {
  subject: string;
  issuer: string;
  publicKey: KeyObject;
  signingKey: KeyObject;
  extensions: Buffer[];
}): Buffer {
  const now = Date.now();
  const serial = randomBytes(16);
  serial[0] = (serial[0] as number) & 0x7f; // a positive INTEGER
  const algorithm = seq(oid(oids.ecdsaWithSha256));
  const tbs = seq(
    tlv(0xa0, integer(Buffer.from([2]))), // version v3
    integer(serial),
    algorithm,
    name(options.issuer),
    seq(time(new Date(now - 86_400_000)), time(new Date(now + 30 * 86_400_000))),
    name(options.subject),
    options.publicKey.export({ type: 'spki', format: 'der' }),
    tlv(0xa3, seq(...options.extensions)),
  );
  return seq(tbs, algorithm, bitString(sign('sha256', tbs, options.signingKey), 0));
}

const keyIdentifier = (publicKey: KeyObject) =>
  createHash('sha1')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest();

const name = (commonName: string) =>
  seq(tlv(0x31, seq(oid(oids.commonName), tlv(0x0c, Buffer.from(commonName, 'utf8')))));

const extension = (id: string, value: Buffer, critical = false) =>
  critical ? seq(oid(id), bool(true), octets(value)) : seq(oid(id), octets(value));

function generalName(altName: string): Buffer {
  if (isIPv4(altName)) return tlv(0x87, Buffer.from(altName.split('.').map(Number)));
  return tlv(0x82, Buffer.from(altName, 'ascii'));
}

function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14); // YYYYMMDDHHMMSS
  const year = date.getUTCFullYear();
  return year < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`));
}

function tlv(tag: number, content: Buffer): Buffer {
  const length = content.length;
  let header: Buffer;
  if (length < 0x80) header = Buffer.from([tag, length]);
  else if (length < 0x100) header = Buffer.from([tag, 0x81, length]);
  else header = Buffer.from([tag, 0x82, length >> 8, length & 0xff]);
  return Buffer.concat([header, content]);
}

const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const octets = (content: Buffer) => tlv(0x04, content);
const bool = (value: boolean) => tlv(0x01, Buffer.from([value ? 0xff : 0]));
const bitString = (content: Buffer, unusedBits: number) =>
  tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), content]));

function integer(value: Buffer): Buffer {
  let start = 0;
  while (start < value.length - 1 && value[start] === 0 && ((value[start + 1] as number) & 0x80) === 0) start++;
  const trimmed = value.subarray(start);
  return tlv(0x02, ((trimmed[0] as number) & 0x80) === 0 ? trimmed : Buffer.concat([Buffer.from([0]), trimmed]));
}

function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const chunk = [arc & 0x7f];
    for (let value = arc >> 7; value > 0; value >>= 7) chunk.unshift((value & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

const pem = (label: string, der: Buffer) =>
  `-----BEGIN ${label}-----\n${der
    .toString('base64')
    .match(/.{1,64}/g)
    ?.join('\n')}\n-----END ${label}-----\n`;
