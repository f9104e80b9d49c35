import { Agent, createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maxBodyBytes, schedulerNodeListener } from '../../packages/core/src/scheduler/composition/scheduler-app.ts';
import { deployedEnvironment, httpApiEvent, invoke } from '../deploy/lambda-events.ts';
import { keepAliveRequest } from '../support/keep-alive.ts';
import { type SchedulerHarness, startScheduler } from '../support/scheduler-harness.ts';

const refusal = `Request body too large: larger than ${maxBodyBytes} bytes`;

/**
 * Sends a request head and the given body parts on a raw connection, without ending the body unless `end` is set,
 * and resolves with the status line and body of the answer once the server has sent it whole.
 */
function rawRequest(
  port: number,
  head: string,
  parts: Buffer[],
  end = false,
): Promise<{ statusLine: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      const split = received.indexOf('\r\n\r\n');
      if (split < 0) return;
      const headers = received.slice(0, split);
      const length = /content-length: (\d+)/i.exec(headers);
      const body = received.slice(split + 4);
      if (length && body.length >= Number(length[1])) {
        socket.destroy();
        resolve({ statusLine: headers.split('\r\n')[0] ?? '', body: body.slice(0, Number(length[1])) });
      }
    });
    socket.on('error', reject);
    socket.write(head);
    for (const part of parts) socket.write(part);
    if (end) socket.end();
  });
}

describe('the scheduler refuses a body over 1 MiB with 413 before reading it whole', () => {
  let h: SchedulerHarness;
  let server: Server;
  let port: number;
  let root: string;

  beforeAll(async () => {
    h = await startScheduler();
    root = await h.bootstrap();
    // The local server as `npm start` builds it: the scheduler's front on the shared node adapter.
    server = createServer(schedulerNodeListener({ core: async () => h.core, trustedProxies: [] }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await h.close();
  });

  it('node server: a declared 256 MiB body is refused after 64 KiB of it was sent (no token needed)', async () => {
    const head = [
      'POST /v1/acl/login HTTP/1.1',
      'Host: 127.0.0.1',
      'Content-Type: application/json',
      `Content-Length: ${256 * 1024 * 1024}`,
      '',
      '',
    ].join('\r\n');
    const answer = await rawRequest(port, head, [Buffer.alloc(64 * 1024, 'a')]);
    expect(answer).toEqual({ statusLine: 'HTTP/1.1 413 Payload Too Large', body: refusal });
  });

  it('node server: a chunked body without a length is refused as soon as it passes the limit, before it ends', async () => {
    const head = ['POST /v1/acl/login HTTP/1.1', 'Host: 127.0.0.1', 'Transfer-Encoding: chunked', '', ''].join('\r\n');
    const chunk = Buffer.alloc(256 * 1024, 'a');
    const framed = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
    // Five chunks (1.25 MiB) and no terminating chunk: only a server that counts as it reads can answer.
    const answer = await rawRequest(
      port,
      head,
      Array.from({ length: 5 }, () => framed),
    );
    expect(answer).toEqual({ statusLine: 'HTTP/1.1 413 Payload Too Large', body: refusal });
  });

  it('node server: a body under the limit is read and answered as usual, and the server goes on answering', async () => {
    const body = JSON.stringify({ AuthMethodName: 'absent', LoginToken: 'a'.repeat(maxBodyBytes - 100) });
    const response = await fetch(`http://127.0.0.1:${port}/v1/acl/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body,
    });
    expect({ status: response.status, text: await response.text() }).toEqual({
      status: 400,
      text: 'auth method absent not found',
    });
    const over = await fetch(`http://127.0.0.1:${port}/v1/acl/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: 'a'.repeat(maxBodyBytes + 1),
    });
    expect({ status: over.status, text: await over.text() }).toEqual({ status: 413, text: refusal });
    expect(
      (await fetch(`http://127.0.0.1:${port}/v1/acl/token/self`, { headers: { 'X-Scheduler-Token': root } })).status,
    ).toBe(200);
  });

  it('node server, keep-alive client: after a 413 the connection is closed cleanly, and the next request goes out on a new one (issue 24)', async () => {
    // An anonymous caller sends 2 MiB and 12 MiB bodies on a pooled connection; a 413 that leaves the connection
    // open with the body unread makes the server reset it, and the client's next request on it fails (ECONNRESET).
    for (const size of [2 * 1024 * 1024, 12 * 1024 * 1024]) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const first = await keepAliveRequest(agent, port, 'GET', '/v1/acl/token/self', undefined, {
          'X-Scheduler-Token': root,
        });
        expect(first).toMatchObject({ status: 200 });
        const over = await keepAliveRequest(agent, port, 'POST', '/v1/acl/login', 'a'.repeat(size), {
          'Content-Type': 'application/json',
        });
        expect(over).toMatchObject({ status: 413, text: refusal, connection: 'close' });
        for (let attempt = 0; attempt < 3; attempt++) {
          const next = await keepAliveRequest(agent, port, 'GET', '/v1/acl/token/self', undefined, {
            'X-Scheduler-Token': root,
          });
          expect(next).toMatchObject({ status: 200 });
          if ('localPort' in next && 'localPort' in over) expect(next.localPort).not.toBe(over.localPort);
        }
      } finally {
        agent.destroy();
      }
    }
  });

  it('a body under the limit whose object does not fit one item (400 KB) is a 413 too, and nothing is written', async () => {
    const before = await h.scheduler.state.currentIndex();
    const policies = Array.from({ length: 4000 }, (_, n) => `policy-${n}-${'p'.repeat(110)}`);
    const out = await h.call('POST', '/v1/acl/token', { token: root, body: { Name: 'huge', Policies: policies } });
    expect({ status: out.status, text: out.text }).toEqual({
      status: 413,
      text: 'the data is too large to store (at most 400 KB per item)',
    });
    expect(await h.scheduler.state.currentIndex()).toBe(before);
  });

  it('Lambda (functions/scheduler/api.ts on an HTTP API event): 413 with and without a Content-Length header', async () => {
    await deployedEnvironment();
    const { handler } = await import('../../functions/scheduler/api.ts');
    const large = { AuthMethodName: 'absent', LoginToken: 'a'.repeat(maxBodyBytes) };
    expect(await invoke(handler, httpApiEvent('POST', '/v1/acl/login', { body: large }))).toEqual({
      status: 413,
      body: refusal,
    });
    const unsized = httpApiEvent('POST', '/v1/acl/login', { body: large });
    delete unsized.headers['content-length'];
    expect(await invoke(handler, unsized)).toEqual({ status: 413, body: refusal });
    const small = httpApiEvent('POST', '/v1/acl/login', { body: { AuthMethodName: 'absent', LoginToken: 'x' } });
    expect(await invoke(handler, small)).toEqual({ status: 400, body: 'auth method absent not found' });
  });
});
