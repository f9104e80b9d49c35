import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, type JWK, jwtVerify, SignJWT } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { supportedAlgorithms } from '../../packages/core/src/lib/jwt/algorithms.ts';
import { signatureCheck, TokenInvalid } from '../../packages/core/src/lib/jwt/keys.ts';

/**
 * The JWT signature check both services' logins use (`lib/jwt/keys.ts`, node:crypto's one-shot verify), against jose
 * as the oracle: every algorithm a login accepts verifies a token jose signed, and what an attacker makes of a token
 * (a changed byte, another algorithm, a key of the wrong kind or size, header tricks) is refused by both.
 */
const pairs: Record<string, () => { publicKey: KeyObject; privateKey: KeyObject }> = {
  RS: () => generateKeyPairSync('rsa', { modulusLength: 2048 }),
  ES256: () => generateKeyPairSync('ec', { namedCurve: 'P-256' }),
  ES384: () => generateKeyPairSync('ec', { namedCurve: 'P-384' }),
  ES512: () => generateKeyPairSync('ec', { namedCurve: 'P-521' }),
  EdDSA: () => generateKeyPairSync('ed25519'),
};
const pairFor = (alg: string) => (pairs[alg] ?? (pairs.RS as () => { publicKey: KeyObject; privateKey: KeyObject }))();
const claims = { iss: 'https://ci.example', sub: 'build-7', aud: 'keyhaven' };
let version = 0;
const pemCheck = async (...keys: KeyObject[]) =>
  signatureCheck(`test-${++version}`, {
    kind: 'pem',
    keys: await Promise.all(keys.map((key) => exportSPKI(key))),
  });
const signed = (alg: string, key: KeyObject, header: Record<string, unknown> = {}) =>
  new SignJWT(claims).setProtectedHeader({ alg, ...header }).sign(key);
const refusal = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(TokenInvalid);
  return (error as Error).message;
};
const joseAccepts = (jwt: string, key: KeyObject, alg: string) =>
  jwtVerify(jwt, key, { algorithms: [alg] }).then(
    () => true,
    () => false,
  );
/** A part of a compact JWS replaced. */
const withPart = (jwt: string, index: number, part: string) =>
  jwt
    .split('.')
    .map((each, at) => (at === index ? part : each))
    .join('.');
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('JWT signatures (node:crypto verify, jose as the oracle)', () => {
  for (const alg of supportedAlgorithms) {
    it(`${alg}: a token jose signed verifies, with the payload it signed; a changed payload or signature does not`, async () => {
      const { publicKey, privateKey } = pairFor(alg);
      const other = pairFor(alg);
      const jwt = await signed(alg, privateKey);
      const check = await pemCheck(other.publicKey, publicKey);
      expect(JSON.parse(Buffer.from(await check(jwt, [alg])).toString())).toEqual(claims);
      expect(await joseAccepts(jwt, publicKey, alg)).toBe(true);

      const changedPayload = withPart(jwt, 1, b64({ ...claims, sub: 'admin' }));
      const signature = Buffer.from(jwt.split('.')[2] as string, 'base64url');
      signature.writeUInt8((signature.at(-1) as number) ^ 1, signature.length - 1);
      const changedSignature = withPart(jwt, 2, signature.toString('base64url'));
      for (const forged of [changedPayload, changedSignature]) {
        expect(await refusal(check(forged, [alg]))).toBe('failed to verify id token signature');
        expect(await joseAccepts(forged, publicKey, alg)).toBe(false);
      }
    });
  }

  it('ECDSA: every r and s verifies, whatever their leading bytes (300 tokens per curve)', async () => {
    for (const alg of ['ES256', 'ES512']) {
      const { publicKey, privateKey } = pairFor(alg);
      const check = await pemCheck(publicKey);
      for (let each = 0; each < 300; each++) {
        const jwt = await new SignJWT({ ...claims, jti: String(each) }).setProtectedHeader({ alg }).sign(privateKey);
        expect(JSON.parse(Buffer.from(await check(jwt, [alg])).toString()).jti).toBe(String(each));
      }
    }
  });

  it('refuses an algorithm not allowed, "none", HMAC with the public key as secret, and a key of the wrong kind', async () => {
    const rsa = pairFor('RS256');
    const ec = pairFor('ES256');
    const check = await pemCheck(rsa.publicKey, ec.publicKey);
    const rs256 = await signed('RS256', rsa.privateKey);
    expect(await refusal(check(rs256, ['ES256']))).toContain('token signed with unsupported algorithm "RS256"');

    const unsigned = `${b64({ alg: 'none' })}.${b64(claims)}.`;
    expect(await refusal(check(unsigned, supportedAlgorithms))).toContain('unsupported algorithm "none"');

    const secret = Buffer.from(await exportSPKI(rsa.publicKey));
    const hmac = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(secret);
    expect(await refusal(check(hmac, supportedAlgorithms))).toContain('unsupported algorithm "HS256"');

    // An RSA signature presented as ES256 (the header lies about the key): only the EC key is tried, and fails.
    const relabelled = `${b64({ alg: 'ES256' })}.${rs256.split('.')[1]}`;
    const rsaSignature = sign('sha256', Buffer.from(relabelled), rsa.privateKey).toString('base64url');
    expect(await refusal(check(`${relabelled}.${rsaSignature}`, ['ES256']))).toBe(
      'failed to verify id token signature',
    );
    // An ES256 signature in DER form rather than JWS's r||s: refused by both.
    const input = `${b64({ alg: 'ES256' })}.${b64(claims)}`;
    const der = `${input}.${sign('sha256', Buffer.from(input), ec.privateKey).toString('base64url')}`;
    expect(await refusal(check(der, ['ES256']))).toBe('failed to verify id token signature');
    expect(await joseAccepts(der, ec.publicKey, 'ES256')).toBe(false);
  });

  it('refuses an RSA key under 2048 bits, critical headers, an unencoded payload and malformed tokens', async () => {
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const input = `${b64({ alg: 'RS256' })}.${b64(claims)}`;
    const smallJwt = `${input}.${sign('sha256', Buffer.from(input), small.privateKey).toString('base64url')}`;
    expect(await refusal((await pemCheck(small.publicKey))(smallJwt, ['RS256']))).toBe(
      'RS256 requires an RSA key of 2048 bits or more',
    );
    expect(await joseAccepts(smallJwt, small.publicKey, 'RS256')).toBe(false);

    const rsa = pairFor('RS256');
    const check = await pemCheck(rsa.publicKey);
    // Signed properly: only the header's demands are the reason for refusal.
    const signedInput = (header: Record<string, unknown>) => {
      const text = `${b64(header)}.${b64(claims)}`;
      return `${text}.${sign('sha256', Buffer.from(text), rsa.privateKey).toString('base64url')}`;
    };
    const critical = signedInput({ alg: 'RS256', crit: ['exp'], exp: 1 });
    expect(await refusal(check(critical, ['RS256']))).toContain('critical header parameters ("crit")');
    const unencoded = signedInput({ alg: 'RS256', b64: false, crit: ['b64'] });
    expect(await refusal(check(unencoded, ['RS256']))).toContain('malformed JWT');
    const unencodedOnly = signedInput({ alg: 'RS256', b64: false });
    expect(await refusal(check(unencodedOnly, ['RS256']))).toContain('an unencoded payload');
    for (const malformed of [
      'not.a.jwt',
      'a.b',
      `${b64([1])}.${b64(claims)}.AAAA`,
      `${b64({ alg: 'RS256' })}.e30.A+/=`,
    ])
      expect(await refusal(check(malformed, ['RS256']))).toContain('malformed JWT');
  });

  describe('keys from a JWKS URL', () => {
    const keys: JWK[] = [];
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ keys }));
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('tries every key the set matches (no kid) and only those; a stranger signature is refused', async () => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/keys`;
      const [first, second, stranger] = [pairFor('ES256'), pairFor('ES256'), pairFor('ES256')];
      keys.push({ ...(await exportJWK(first.publicKey)), use: 'sig' }, { ...(await exportJWK(second.publicKey)) });
      const check = await signatureCheck(`test-jwks-${++version}`, { kind: 'jwks', sets: [{ url, caPem: '' }] });
      const jwt = await signed('ES256', second.privateKey);
      expect(JSON.parse(Buffer.from(await check(jwt, ['ES256'])).toString())).toEqual(claims);
      expect(await refusal(check(await signed('ES256', stranger.privateKey), ['ES256']))).toBe(
        'failed to verify id token signature',
      );
      expect(await refusal(check(await signed('ES256', second.privateKey, { kid: 'unknown' }), ['ES256']))).toContain(
        'no key in the key set matches',
      );
    });

    it('verifies every kind of key a set can hold, by kid, with the algorithm its JWK names', async () => {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/keys`;
      const pairsByAlg = Object.fromEntries(supportedAlgorithms.map((alg) => [alg, pairFor(alg)]));
      keys.splice(0);
      for (const [alg, pair] of Object.entries(pairsByAlg))
        keys.push({ ...(await exportJWK(pair.publicKey)), kid: `key-${alg}`, alg });
      const check = await signatureCheck(`test-jwks-${++version}`, { kind: 'jwks', sets: [{ url, caPem: '' }] });
      for (const [alg, pair] of Object.entries(pairsByAlg)) {
        const jwt = await signed(alg, pair.privateKey, { kid: `key-${alg}` });
        expect(JSON.parse(Buffer.from(await check(jwt, [alg])).toString())).toEqual(claims);
        const forged = withPart(jwt, 1, b64({ ...claims, sub: 'admin' }));
        expect(await refusal(check(forged, [alg]))).toBe('failed to verify id token signature');
      }
    });
  });
});
