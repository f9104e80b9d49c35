import type { Server } from 'node:http';
import net from 'node:net';
import { Duplex } from 'node:stream';
import { ListRequestRewriter } from './list-request-rewriter.ts';

/**
 * Node's HTTP parser rejects the `LIST` method that Vault clients and `curl -X LIST` send. This listener
 * rewrites a request line `LIST /path` to `GET /path?list=true` (what Vault's own client sends) before the
 * HTTP server parses it. Only request lines are rewritten, however the socket splits the bytes (see
 * `ListRequestRewriter`): a body that contains `LIST /x y` passes unchanged.
 */
export async function listenWithListMethod(server: Server, port: number, host: string): Promise<net.Server> {
  const front = net.createServer((socket) => server.emit('connection', rewritingStream(socket)));
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(port, host, () => {
      front.off('error', reject);
      resolve();
    });
  });
  // The HTTP server never listens itself; 'listening' starts its connection tracking, which enforces the
  // header and request timeouts and lets `close` find idle keep-alive connections.
  server.emit('listening');
  return front;
}

/**
 * Stops accepting and closes idle keep-alive connections at once (and each that becomes idle), then, once
 * `drained` resolves (the requests in flight have answered) or after `graceMs`, closes whatever is left: an
 * event stream, a client holding a connection open. Resolves once the port is free and every connection closed.
 */
export async function closeGracefully(
  server: Server,
  front: net.Server,
  graceMs = 5_000,
  drained?: Promise<unknown>,
): Promise<void> {
  const closed = new Promise<void>((resolve) => front.close(() => resolve()));
  server.close(); // closes idle connections and stops the timeout checks; the HTTP server has no port of its own
  const idleAgain = setInterval(() => server.closeIdleConnections(), 50);
  let deadline: NodeJS.Timeout | undefined;
  const closeAll = () => server.closeAllConnections();
  void Promise.race([
    drained ?? new Promise(() => {}),
    new Promise((resolve) => (deadline = setTimeout(resolve, graceMs))),
  ]).then(closeAll);
  try {
    await closed;
  } finally {
    clearInterval(idleAgain);
    clearTimeout(deadline);
  }
}

/** The socket seen through a JS stream (the HTTP parser would otherwise read the native handle directly). */
function rewritingStream(socket: net.Socket): Duplex {
  const stream = new Duplex({
    // The server's text goes to the socket as text, without a copy into a Buffer on the way.
    decodeStrings: false,
    read() {
      socket.resume();
    },
    write(chunk, encoding, done) {
      socket.write(chunk, encoding, done);
    },
    final(done) {
      socket.end(done);
    },
    destroy(error, done) {
      socket.destroy(error ?? undefined);
      done(error);
    },
  });
  const rewriter = new ListRequestRewriter();
  socket.on('data', (chunk: Buffer) => {
    const bytes = rewriter.push(chunk);
    if (bytes.length > 0 && !stream.push(bytes)) socket.pause();
  });
  socket.on('end', () => {
    const held = rewriter.flush();
    if (held.length > 0) stream.push(held);
    stream.push(null);
  });
  socket.on('error', (error) => stream.destroy(error));
  socket.on('close', () => stream.destroy());
  return Object.assign(stream, {
    remoteAddress: socket.remoteAddress,
    remotePort: socket.remotePort,
    encrypted: false,
    setTimeout: (ms: number) => socket.setTimeout(ms),
    setNoDelay: (noDelay?: boolean) => socket.setNoDelay(noDelay),
    setKeepAlive: (enable?: boolean, delay?: number) => socket.setKeepAlive(enable, delay),
  });
}
