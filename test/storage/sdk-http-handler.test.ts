import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent, createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { Readable } from 'node:stream';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { HttpRequest } from '@smithy/protocol-http';
import { afterEach, describe, expect, it } from 'vitest';
import { DynamoStore } from '../../packages/core/src/storage/dynamodb-store.ts';
import { SdkHttpHandler } from '../../packages/core/src/storage/sdk-http-handler.ts';
import { createTestCa } from '../support/test-pki.ts';

/**
 * The HTTP client under the services' DynamoDB clients (`storage/sdk-http-handler.ts`), against the SDK's own default
 * handler as the oracle (what a server receives, what the SDK is handed back) and through a real DynamoDBClient for
 * what the SDK's retry strategy reads from its failures. The store contract (`store-contract.test.ts`) runs every
 * store operation through it on DynamoDB Local.
 */

interface Received {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const servers: Server[] = [];
const handlers: Array<{ destroy(): void }> = [];
afterEach(async () => {
  for (const handler of handlers.splice(0)) handler.destroy();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(
  answer: (request: IncomingMessage, response: ServerResponse, body: string) => void,
  server: Server = createServer(),
): Promise<{ port: number; received: Received[] }> {
  const received: Received[] = [];
  server.on('request', async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    received.push({ method: request.method ?? '', url: request.url ?? '', headers: { ...request.headers }, body });
    answer(request, response, body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  servers.push(server);
  return { port: (server.address() as AddressInfo).port, received };
}

const ours = (options?: ConstructorParameters<typeof SdkHttpHandler>[0]) => {
  const handler = new SdkHttpHandler(options);
  handlers.push(handler);
  return handler;
};

const bodyText = async (body: unknown): Promise<string> => {
  if (body instanceof Uint8Array) return Buffer.from(body).toString('utf8');
  const chunks: Buffer[] = [];
  for await (const chunk of body as Readable) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

/** A DynamoDB `GetItem` answer the SDK parses. */
const getItemAnswer = JSON.stringify({ Item: { pk: { S: 'token#a' }, sk: { S: 'token' }, note: { S: 'ü' } } });

const storeOn = (port: number, handler: SdkHttpHandler, maxAttempts = 3) => {
  const client = new DynamoDBClient({
    region: 'eu-west-1',
    endpoint: `http://127.0.0.1:${port}`,
    credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
    requestHandler: handler,
    maxAttempts,
  });
  return new DynamoStore(client, 'keyhaven');
};

describe('the HTTP handler under the services DynamoDB clients', () => {
  it('sends what the SDK default handler sends, and hands back what it hands back', async () => {
    const { port, received } = await serve((_request, response) => {
      response.writeHead(201, 'Made', { 'x-amzn-requestid': 'r-1', 'x-twice': ['a', 'b'] });
      // The body in three writes: the handler must hand back all of it, in order.
      response.write('{"par');
      response.write('t":"ü"');
      response.end('}');
    });
    const request = () =>
      new HttpRequest({
        protocol: 'http:',
        hostname: '127.0.0.1',
        port,
        method: 'POST',
        path: '/a%20b/',
        query: { zeta: 'x y!*', alpha: ['2', '1'], flag: null },
        headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.GetItem' },
        body: '{"TableName":"ü"}',
      });
    const oracle = new NodeHttpHandler();
    handlers.push(oracle);
    const theirs = (await oracle.handle(request())).response;
    const mine = (await ours().handle(request())).response;

    expect(received).toHaveLength(2);
    const [viaOracle, viaOurs] = received as [Received, Received];
    expect(viaOurs).toEqual(viaOracle);
    expect(viaOurs.url).toBe('/a%20b/?alpha=2&alpha=1&flag&zeta=x%20y%21%2A');
    expect(viaOurs.body).toBe('{"TableName":"ü"}');
    expect(viaOurs.headers.connection).toBe('keep-alive');

    expect(mine.statusCode).toBe(201);
    expect(mine.reason).toBe('Made');
    expect(mine.headers).toEqual(theirs.headers);
    expect(mine.headers['x-twice']).toBe('a, b'); // node joins a repeated field; both handlers hand on its text
    expect(await bodyText(mine.body)).toBe(await bodyText(theirs.body));
    expect(await bodyText(mine.body)).toBe('{"part":"ü"}');
  });

  it('keeps its connections alive between calls, and closes them when destroyed', async () => {
    const sockets = new Set<Socket>();
    const { port } = await serve((request, response) => {
      sockets.add(request.socket);
      response.end(getItemAnswer);
    });
    const handler = ours();
    const store = storeOn(port, handler);
    for (let index = 0; index < 5; index++) expect((await store.get('token#a', 'token'))?.note).toBe('ü');
    expect(sockets.size).toBe(1);
    const [socket] = [...sockets] as [Socket];
    const closed = once(socket, 'close');
    handler.destroy();
    await closed;
    expect(socket.destroyed).toBe(true);
  });

  it('a call whose connection is reset, or cut off mid-answer, is retried by the SDK and answered', async () => {
    let calls = 0;
    const { port, received } = await serve((request, response) => {
      calls++;
      if (calls === 1) request.socket.destroy();
      else if (calls === 2) {
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'content-length': '500' });
        response.write(getItemAnswer.slice(0, 10));
        setTimeout(() => request.socket.destroy(), 20);
      } else response.end(getItemAnswer);
    });
    expect((await storeOn(port, ours(), 3).get('token#a', 'token'))?.note).toBe('ü');
    expect(received).toHaveLength(3);
    // Each attempt is the same signed call.
    expect(new Set(received.map((each) => each.body)).size).toBe(1);
  });

  it('a call that outlasts its request timeout fails as TimeoutError, which the SDK retries', async () => {
    let calls = 0;
    const { port, received } = await serve((_request, response) => {
      calls++;
      if (calls > 1) response.end(getItemAnswer);
      // The first call is never answered.
    });
    const started = Date.now();
    expect((await storeOn(port, ours({ requestTimeoutMs: 200 }), 2).get('token#a', 'token'))?.note).toBe('ü');
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    expect(received).toHaveLength(2);

    // With no attempts left, the caller sees the timeout.
    calls = -10;
    await expect(storeOn(port, ours({ requestTimeoutMs: 100 }), 1).get('token#a', 'token')).rejects.toMatchObject({
      name: 'TimeoutError',
      message: expect.stringContaining('longer than 100 ms'),
    });
  });

  it('a socket idle past its idle timeout fails its call as TimeoutError', async () => {
    const { port } = await serve(() => {});
    const handler = ours({ idleTimeoutMs: 150 });
    const call = handler.handle(
      new HttpRequest({ protocol: 'http:', hostname: '127.0.0.1', port, method: 'POST', path: '/', body: '{}' }),
    );
    await expect(call).rejects.toMatchObject({ name: 'TimeoutError', message: expect.stringContaining('150 ms') });
  });

  it('an aborted call ends as AbortError, whether aborted before it is sent or while it waits', async () => {
    const { port, received } = await serve(() => {});
    const request = () =>
      new HttpRequest({ protocol: 'http:', hostname: '127.0.0.1', port, method: 'POST', path: '/', body: '{}' });
    const handler = ours();
    const before = new AbortController();
    before.abort();
    await expect(handler.handle(request(), { abortSignal: before.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });
    const during = new AbortController();
    const call = handler.handle(request(), { abortSignal: during.signal });
    await new Promise((resolve) => setTimeout(resolve, 50));
    during.abort();
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    // Only the call aborted while waiting was sent.
    expect(received).toHaveLength(1);
  });

  it('sends a streamed body whole', async () => {
    const { port, received } = await serve((_request, response) => response.end('ok'));
    const response = (
      await ours().handle(
        new HttpRequest({
          protocol: 'http:',
          hostname: '127.0.0.1',
          port,
          method: 'PUT',
          path: '/upload',
          headers: { 'transfer-encoding': 'chunked' },
          body: Readable.from(['one ', 'two ', 'three']),
        }),
      )
    ).response;
    expect(response.statusCode).toBe(200);
    expect(received[0]?.body).toBe('one two three');
  });

  it('speaks TLS to an https endpoint its agent trusts, and refuses a certificate it does not trust', async () => {
    const ca = createTestCa();
    const leaf = ca.issue({ commonName: 'dynamodb.test', usage: 'server' });
    const { port, received } = await serve(
      (_request, response) => response.end(getItemAnswer),
      createHttpsServer({ cert: leaf.cert, key: leaf.key }),
    );
    const request = () =>
      new HttpRequest({ protocol: 'https:', hostname: '127.0.0.1', port, method: 'POST', path: '/', body: '{}' });
    const trusting = ours({ httpsAgent: new HttpsAgent({ ca: ca.cert, keepAlive: true }) });
    const answered = (await trusting.handle(request())).response;
    expect(answered.statusCode).toBe(200);
    expect(await bodyText(answered.body)).toBe(getItemAnswer);

    // The default agent trusts the system's authorities only: a certificate from elsewhere is refused unanswered.
    await expect(ours().handle(request())).rejects.toMatchObject({ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
    expect(received).toHaveLength(1);
  });
});
