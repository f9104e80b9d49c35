import { Agent, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secretsNodeListener } from '../../packages/core/src/http/secrets-node.ts';
import { maxBodyBytes } from '../../packages/core/src/secrets/framework/pipeline.ts';
import { keepAliveRequest } from '../support/keep-alive.ts';
import { type SecretsService, startSecretsInMemory } from '../support/secrets-harness.ts';

/**
 * Issue 24: an anonymous caller sends an oversized body on a kept-alive connection (node's http.Agent with keepAlive,
 * as SDKs pool connections). The 413 must not leave the connection open with the body unread: the next request of
 * that client must succeed, on a new connection, never meet ECONNRESET.
 */
describe('the secrets service after a 413 on a kept-alive connection (node server as npm start builds it)', () => {
  let h: SecretsService;
  let server: Server;
  let port: number;

  beforeAll(async () => {
    h = await startSecretsInMemory();
    server = createServer(secretsNodeListener({ core: async () => h.core, trustedProxies: [] }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await h.close();
  });

  it('answers 413 with Connection: close (declared length and chunked), and the next request on the pool succeeds on a new connection', async () => {
    const headers = {
      'X-Secrets-Token': h.rootToken,
      'Content-Type': 'application/json',
    };
    for (const [size, chunked] of [
      [2 * 1024 * 1024, false],
      [12 * 1024 * 1024, false],
      [2 * 1024 * 1024, true],
    ] as const) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        expect(await keepAliveRequest(agent, port, 'GET', '/v1/sys/health', undefined)).toMatchObject({ status: 200 });
        const body = JSON.stringify({ blob: 'x'.repeat(size) });
        const over = await keepAliveRequest(
          agent,
          port,
          'POST',
          '/v1/kv/app/huge',
          body,
          chunked ? { ...headers, 'Transfer-Encoding': 'chunked' } : headers,
        );
        expect(over, `${size} bytes${chunked ? ', chunked' : ''}`).toMatchObject({ status: 413, connection: 'close' });
        if ('text' in over)
          expect(JSON.parse(over.text)).toEqual({
            errors: [`request body larger than ${maxBodyBytes} bytes`],
          });
        for (let attempt = 0; attempt < 3; attempt++) {
          const next = await keepAliveRequest(agent, port, 'GET', '/v1/kv/app/huge', undefined, {
            'X-Secrets-Token': h.rootToken,
          });
          // Nothing was written: the refused body never reached the store.
          expect(next).toMatchObject({ status: 404 });
          if ('localPort' in next && 'localPort' in over) expect(next.localPort).not.toBe(over.localPort);
        }
      } finally {
        agent.destroy();
      }
    }
  });
});
