import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Hash } from '@smithy/hash-node';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { DynamoStore } from '../../packages/core/src/storage/dynamodb-store.ts';
import { KeyedSha256 } from '../../packages/core/src/storage/sdk-hash.ts';
import { storeClientOptions } from '../../packages/core/src/storage/store-client.ts';

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
      // A key given as text (SigV4's secret access key), again from the keys kept, and after others pushed it out.
      const textKey = key.toString('latin1');
      const textMac = createHmac('sha256', Buffer.from(textKey, 'utf8')).update('x').digest('hex');
      expect(await digestOf(new KeyedSha256(textKey), 'x')).toBe(textMac);
      expect(await digestOf(new KeyedSha256(textKey), 'x')).toBe(textMac);
      for (const other of ['a', 'b', 'c', 'd', 'e']) await digestOf(new KeyedSha256(other), 'x');
      expect(await digestOf(new KeyedSha256(textKey), 'x')).toBe(textMac);
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

  it("signs every call of a store's client as the SDK's own signer does, with the credentials of the moment", async () => {
    // What the client sends, caught by a server standing in for DynamoDB (which would refuse a wrong signature; the
    // suite's DynamoDB Local does not check them).
    const received: { headers: IncomingHttpHeaders; body: string }[] = [];
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on('end', () => {
        received.push({ headers: request.headers, body });
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        response.end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    // Credentials that expire at once: the SDK fetches new ones for every call, as it does when a role's expire.
    const issued: { accessKeyId: string; secretAccessKey: string }[] = [];
    const credentials = async () => {
      const fresh = { accessKeyId: `AKID${issued.length}`, secretAccessKey: randomBytes(30).toString('base64') };
      issued.push(fresh);
      return { ...fresh, expiration: new Date(Date.now() + 1000) };
    };
    const client = new DynamoDBClient({
      region: 'eu-west-1',
      endpoint: `http://127.0.0.1:${port}`,
      credentials,
      ...storeClientOptions(),
    });
    try {
      const store = new DynamoStore(client, 'keyhaven');
      await Promise.all([store.get('token#a', 'token'), store.get('token#b', 'token')]);
      await store.get('mount#c', 'secret/db');
      await store.get('mount#c', 'secret/other');
      expect(received).toHaveLength(4);
      const keys: string[] = [];
      for (const { headers, body } of received) {
        const authorization = headers.authorization as string;
        const keyId = /Credential=(AKID\d+)\//.exec(authorization)?.[1] as string;
        keys.push(keyId);
        const used = issued.find((each) => each.accessKeyId === keyId);
        expect(used).toBeDefined();
        const signedHeaders = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';') ?? [];
        const oracle = new SignatureV4({
          credentials: used as { accessKeyId: string; secretAccessKey: string },
          region: 'eu-west-1',
          service: 'dynamodb',
          sha256: Hash.bind(null, 'sha256'),
        });
        const stamp = headers['x-amz-date'] as string;
        const signingDate = new Date(
          `${stamp.slice(0, 4)}-${stamp.slice(4, 6)}-${stamp.slice(6, 8)}T${stamp.slice(9, 11)}:${stamp.slice(11, 13)}:${stamp.slice(13, 15)}Z`,
        );
        const resigned = await oracle.sign(
          new HttpRequest({
            method: 'POST',
            protocol: 'http:',
            hostname: '127.0.0.1',
            port,
            path: '/',
            headers: Object.fromEntries(signedHeaders.map((name) => [name, headers[name] as string])),
            body,
          }),
          { signingDate },
        );
        expect(authorization).toBe(resigned.headers.authorization);
      }
      // Each call signed with the credentials current when it was made, not those of the first call (the two concurrent
      // calls may share one refresh).
      const [first, second, third, fourth] = keys;
      expect(new Set([third, fourth]).size).toBe(2);
      expect([first, second]).not.toContain(third);
      expect([first, second]).not.toContain(fourth);
    } finally {
      client.destroy();
      server.close();
    }
  });
});
