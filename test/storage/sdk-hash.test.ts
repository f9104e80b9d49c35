import { createHash, createHmac, randomBytes } from 'node:crypto';
import { Hash } from '@smithy/hash-node';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { KeyedSha256 } from '../../packages/core/src/storage/sdk-hash.ts';

/**
 * The SHA-256 the services' DynamoDB clients sign with (`storage/sdk-hash.ts`). DynamoDB Local accepts any signature,
 * so the suite's other tests cannot tell a wrong one: here the SDK's own signer signs the same requests with the SDK's
 * own hash (@smithy/hash-node, the oracle) and with ours, and the signatures must be the same.
 */
const digestOf = async (hash: { update(data: never): void; digest(): Promise<Uint8Array> }, ...parts: unknown[]) => {
  for (const part of parts) hash.update(part as never);
  return Buffer.from(await hash.digest()).toString('hex');
};

describe('the SDK signing hash', () => {
  it('hashes and MACs text and bytes in every form as node:crypto does, and again after reset', async () => {
    for (let round = 0; round < 50; round++) {
      const key = randomBytes(1 + (round % 64));
      const data = randomBytes(round * 7);
      const text = `AWS4-HMAC-SHA256 ${round} é`;
      const hmac = createHmac('sha256', key).update(text).update(data).digest('hex');
      expect(await digestOf(new KeyedSha256(key), text, data)).toBe(hmac);
      const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
      expect(await digestOf(new KeyedSha256(new Uint8Array(key)), text, view)).toBe(hmac);
      expect(await digestOf(new KeyedSha256(), data)).toBe(createHash('sha256').update(data).digest('hex'));
      expect(await digestOf(new KeyedSha256(key.toString('latin1')), 'x')).toBe(
        createHmac('sha256', Buffer.from(key.toString('latin1'), 'utf8'))
          .update('x')
          .digest('hex'),
      );
      const reused = new KeyedSha256(key);
      reused.update('discarded');
      reused.reset();
      expect(await digestOf(reused, text, data)).toBe(hmac);
    }
  });

  it("signs a DynamoDB request exactly as the SDK's own hash does (SigV4, same time, credentials and body)", async () => {
    for (let round = 0; round < 20; round++) {
      const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: randomBytes(30).toString('base64') };
      const request = () =>
        new HttpRequest({
          method: 'POST',
          protocol: 'https:',
          hostname: 'dynamodb.eu-west-1.amazonaws.com',
          path: '/',
          headers: {
            host: 'dynamodb.eu-west-1.amazonaws.com',
            'content-type': 'application/x-amz-json-1.0',
            'x-amz-target': 'DynamoDB_20120810.GetItem',
          },
          body: JSON.stringify({ TableName: 'keyhaven', Key: { pk: { S: `token#${round}` }, sk: { S: 'token' } } }),
        });
      const signingDate = new Date(Date.UTC(2026, 10, 26, 12, round));
      const signed = async (sha256: unknown) => {
        const signer = new SignatureV4({
          credentials,
          region: 'eu-west-1',
          service: 'dynamodb',
          sha256: sha256 as never,
        });
        // Twice: the second signature uses the signing key the signer cached after the first.
        await signer.sign(request(), { signingDate });
        return (await signer.sign(request(), { signingDate })).headers.authorization;
      };
      const ours = await signed(KeyedSha256);
      expect(ours).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20261126\/eu-west-1\/dynamodb\/aws4_request, /);
      // The SDK's own: its Node hash, bound to SHA-256 as the SDK's client config binds it.
      expect(ours).toBe(await signed(Hash.bind(null, 'sha256')));
    }
  });
});
