/**
 * Issue 39 §5: `npm start`'s listeners kept node's defaults, so a client could hold a connection open with headers it
 * never finishes (63–83 s) or a body it trickles (about 300 s), and open as many such connections as it liked, each
 * able to buffer up to the 1 MiB body limit. Each listener now answers 408 and closes a connection whose headers are
 * not in within 10 s or whose whole request is not in within 30 s, and keeps at most 256 connections
 * (`listenerLimits` in packages/local/src/start-local.ts). Here the same runtime runs with the limits shortened, on both
 * listeners, through the same `LIST`-rewriting front every connection of `npm start` passes.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type LocalRuntime, listenerLimits, startLocal } from '../../packages/local/src/start-local.ts';

const limits = { headersTimeoutMs: 400, requestTimeoutMs: 800, maxConnections: 4, checkEveryMs: 50 };

let runtime: LocalRuntime;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'keyhaven-slow-'));
  runtime = await startLocal({
    dataDir,
    dynamoDbEndpoint: inject('dynamoEndpoint'),
    tableName: `slow-${randomBytes(6).toString('hex')}`,
    secretsPort: 0,
    schedulerPort: 0,
    sweepIntervalMs: 60_000,
    log: { info() {}, error() {} },
    limits,
  });
});
afterAll(async () => {
  await runtime?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A raw connection: what it has received so far, and a promise of everything once the server closes it. */
async function open(url: string): Promise<{ socket: Socket; received: () => string; closed: Promise<string> }> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    text += chunk;
  });
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(text)));
  socket.on('error', () => {});
  return { socket, received: () => text, closed };
}

const services = () => [
  [runtime.secretsUrl, '/v1/sys/health'],
  [runtime.schedulerUrl, '/v1/acl/auth-methods'],
];

describe("npm start's listeners hold no connection for a slow client", () => {
  it('are set, by default, to 10 s for headers, 30 s for the whole request and 256 connections', () => {
    expect(listenerLimits).toEqual({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      maxConnections: 256,
      checkEveryMs: 1_000,
    });
  });

  for (const name of ['secrets', 'scheduler'] as const) {
    const urlOf = () => (name === 'secrets' ? runtime.secretsUrl : runtime.schedulerUrl);
    it(`${name}: headers never finished are answered 408 and the connection closed`, async () => {
      const client = await open(urlOf());
      client.socket.write('GET /v1/anything HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      const text = await client.closed;
      expect(text).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    });

    it(`${name}: a trickled body is answered 408 and the connection closed`, async () => {
      const client = await open(urlOf());
      client.socket.write(`PUT /v1/anything HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n`);
      // One byte every 50 ms: 20 s for the whole body at this pace, against the shortened 0.8 s.
      const trickle = setInterval(() => {
        if (!client.socket.destroyed) client.socket.write('x');
      }, 50);
      try {
        const text = await client.closed;
        expect(text).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      } finally {
        clearInterval(trickle);
      }
    });
  }

  it('keeps at most maxConnections per listener and closes the next at once; a freed place is taken again', async () => {
    for (const [url, probe] of services()) {
      const held = await Promise.all(Array.from({ length: limits.maxConnections }, () => open(url as string)));
      const refused = await open(url as string);
      // Closed by the listener without a byte, though the client sent a complete request.
      refused.socket.write(`GET ${probe} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      expect(await refused.closed).toBe('');
      // The held ones still work: each answers a request.
      const first = held[0] as Awaited<ReturnType<typeof open>>;
      first.socket.write(`GET ${probe} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      expect(await first.closed).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      // Its place is free again.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const again = await open(url as string);
      again.socket.write(`GET ${probe} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      expect(await again.closed).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      for (const client of held) client.socket.destroy();
      await Promise.all(held.map((client) => client.closed));
    }
  });
});
