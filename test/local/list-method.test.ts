import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Server as NetServer, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeGracefully, listenWithListMethod } from '../../packages/local/src/list-method.ts';

/**
 * The `LIST` front of `npm start` over a real socket: a Node HTTP server behind it answers with what its parser
 * saw (method, URL, body). Each request is sent in two writes split at every byte, and the second write is
 * only sent once the server has received the first, so the server really sees two packets; a body that
 * contains `LIST /x y` (also at a packet start) must arrive unchanged, and only request lines are rewritten.
 */

interface Echo {
  method: string;
  url: string;
  body: string;
}

let http: Server;
let front: NetServer;
let port: number;
/** Bytes the server has received on each connection, by the client's port. */
const received = new Map<number, number>();

beforeAll(async () => {
  http = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const echo: Echo = {
        method: request.method ?? '',
        url: request.url ?? '',
        body: Buffer.concat(chunks).toString('latin1'),
      };
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(echo));
    });
  });
  front = await listenWithListMethod(http, 0, '127.0.0.1');
  port = (front.address() as AddressInfo).port;
  front.on('connection', (socket: Socket) => {
    const clientPort = socket.remotePort ?? 0;
    received.set(clientPort, 0);
    socket.on('data', (chunk: Buffer) => received.set(clientPort, (received.get(clientPort) ?? 0) + chunk.length));
  });
});

afterAll(async () => {
  await closeGracefully(http, front, 1_000);
});

/** A raw client: writes parts one by one (each after the server has received the previous) and reads `count` responses. */
async function exchange(
  parts: Buffer[],
  count: number,
): Promise<Array<{ status: number; echo: Echo | undefined; text: string }>> {
  const socket = connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let buffer = Buffer.alloc(0);
  let ended = false;
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
  });
  socket.on('close', () => {
    ended = true;
  });
  socket.on('error', () => {});
  try {
    const clientPort = socket.localPort ?? 0;
    let sent = 0;
    for (const part of parts) {
      socket.write(part);
      sent += part.length;
      const deadline = Date.now() + 5_000;
      while ((received.get(clientPort) ?? 0) < sent && !ended) {
        if (Date.now() > deadline) throw new Error(`server did not receive ${sent} bytes`);
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    const responses: Array<{ status: number; echo: Echo | undefined; text: string }> = [];
    const deadline = Date.now() + 5_000;
    while (responses.length < count) {
      const headerEnd = buffer.indexOf('\r\n\r\n');
      const head = headerEnd === -1 ? '' : buffer.subarray(0, headerEnd).toString('latin1');
      // Node's own refusals (400) carry no Content-Length and close the connection.
      const length = Number(
        /content-length: (\d+)/i.exec(head)?.[1] ?? (ended ? buffer.length - headerEnd - 4 : Number.NaN),
      );
      if (headerEnd !== -1 && !Number.isNaN(length) && buffer.length >= headerEnd + 4 + length) {
        const text = buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString('latin1');
        buffer = buffer.subarray(headerEnd + 4 + length);
        const status = Number(head.split(' ')[1]);
        let echo: Echo | undefined;
        try {
          echo = JSON.parse(text) as Echo;
        } catch {
          echo = undefined;
        }
        responses.push({ status, echo, text });
        continue;
      }
      if (ended || Date.now() > deadline) break;
      await sleep(1);
    }
    return responses;
  } finally {
    socket.destroy();
  }
}

function request(method: string, target: string, body?: string, headers: string[] = []): string {
  const lines = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', ...headers];
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body, 'latin1')}`);
  return `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
}

function chunkedRequest(target: string, chunks: string[]): string {
  const head = `POST ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n`;
  const body = chunks
    .map((chunk) => `${Buffer.byteLength(chunk, 'latin1').toString(16)};ext=1\r\n${chunk}\r\n`)
    .join('');
  return `${head}${body}0\r\nX-Trailer: LIST /x y\r\n\r\n`;
}

const jsonBody = '{"note":"LIST /x y"}';
/** A body that reads like a LIST request itself. */
const requestLikeBody = 'LIST /x y HTTP/1.1\r\nHost: a\r\n\r\n';

function splitEverywhere(text: string): Array<[number, Buffer[]]> {
  const bytes = Buffer.from(text, 'latin1');
  return Array.from({ length: bytes.length - 1 }, (_, index) => [
    index + 1,
    [bytes.subarray(0, index + 1), bytes.subarray(index + 1)],
  ]);
}

describe('LIST over a real socket', () => {
  it('a body containing "LIST /x y", split at every byte, arrives unchanged', async () => {
    const wire = request('POST', '/v1/secret/app', jsonBody, ['Content-Type: application/json']);
    const splits = splitEverywhere(wire);
    const atBodyLIST = wire.indexOf('LIST /x y');
    expect(splits.some(([at]) => at === atBodyLIST)).toBe(true); // the second packet starts with "LIST /x y"
    for (const [at, parts] of splits) {
      const [response] = await exchange(parts, 1);
      expect(response?.echo, `split at byte ${at}`).toEqual({ method: 'POST', url: '/v1/secret/app', body: jsonBody });
    }
  });

  it('a body that is itself a LIST request line, split at every byte, arrives unchanged', async () => {
    const wire = request('PUT', '/v1/secret/doc', requestLikeBody);
    for (const [at, parts] of splitEverywhere(wire)) {
      const [response] = await exchange(parts, 1);
      expect(response?.echo, `split at byte ${at}`).toEqual({
        method: 'PUT',
        url: '/v1/secret/doc',
        body: requestLikeBody,
      });
    }
  });

  it("the server's text reaches the client byte for byte in the encoding it was written: UTF-8 beyond Latin-1", async () => {
    // The echo is JSON the server writes as a string (UTF-8): a body of Latin-1 bytes 0x80–0xFF comes back as two
    // bytes each, and Content-Length counts the bytes. Text handed to the socket in the wrong encoding would break both.
    const body = `é ü ß ${String.fromCharCode(0xff)} LIST /x y`;
    for (const method of ['PUT', 'LIST']) {
      const [response] = await exchange([Buffer.from(request(method, '/v1/secret/app', body), 'latin1')], 1);
      const echo = JSON.parse(Buffer.from(response?.text ?? '', 'latin1').toString('utf8'));
      expect(response?.status, method).toBe(200);
      expect(echo, method).toEqual({
        method: method === 'LIST' ? 'GET' : method,
        url: method === 'LIST' ? '/v1/secret/app?list=true' : '/v1/secret/app',
        body,
      });
    }
  });

  it('a LIST request split at every byte is rewritten to GET ?list=true, with its query kept', async () => {
    const wire = request('LIST', '/v1/secret/app/?foo=bar', undefined, ['X-Secrets-Token: t']);
    for (const [at, parts] of splitEverywhere(wire)) {
      const [response] = await exchange(parts, 1);
      expect(response?.echo, `split at byte ${at}`).toEqual({
        method: 'GET',
        url: '/v1/secret/app/?foo=bar&list=true',
        body: '',
      });
    }
  });

  it('pipelined requests (Content-Length, LIST, chunked with LIST in its data and trailer, GET) split at every byte', async () => {
    const wire =
      request('POST', '/v1/a', requestLikeBody) +
      request('LIST', '/v1/secret') +
      chunkedRequest('/v1/b', [requestLikeBody, 'LIST /y z', jsonBody]) +
      request('GET', '/v1/c');
    const expected: Echo[] = [
      { method: 'POST', url: '/v1/a', body: requestLikeBody },
      { method: 'GET', url: '/v1/secret?list=true', body: '' },
      { method: 'POST', url: '/v1/b', body: `${requestLikeBody}LIST /y z${jsonBody}` },
      { method: 'GET', url: '/v1/c', body: '' },
    ];
    for (const [at, parts] of splitEverywhere(wire)) {
      const responses = await exchange(parts, expected.length);
      expect(
        responses.map((response) => response.echo),
        `split at byte ${at}`,
      ).toEqual(expected);
    }
  });

  it('the same requests one byte per packet', async () => {
    const wire =
      request('POST', '/v1/a', jsonBody) + request('LIST', '/v1/secret') + chunkedRequest('/v1/b', ['LIST /x y']);
    const bytes = Buffer.from(wire, 'latin1');
    const responses = await exchange(
      Array.from(bytes, (_, index) => bytes.subarray(index, index + 1)),
      3,
    );
    expect(responses.map((response) => response.echo)).toEqual([
      { method: 'POST', url: '/v1/a', body: jsonBody },
      { method: 'GET', url: '/v1/secret?list=true', body: '' },
      { method: 'POST', url: '/v1/b', body: 'LIST /x y' },
    ]);
  });

  it('a request with both Content-Length and chunked is refused by the parser, not reframed', async () => {
    const wire = `POST /v1/a HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nLIST /x y\r\n0\r\n\r\n`;
    const responses = await exchange([Buffer.from(wire, 'latin1')], 1);
    expect(responses.map((response) => response.status)).toEqual([400]);
  });
});
