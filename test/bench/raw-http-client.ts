/**
 * The lightest HTTP/1.1 client a load generator can be, for a bench whose load generator shares the machine's two cores
 * (and its one Node thread) with the server it measures: keep-alive sockets, each sending one prebuilt request and
 * reading no more of the response than its status line and `Content-Length`. node:http's client builds header objects,
 * runs a parser and an agent per request: about as much CPU as the service's own HTTP handling, which then counted
 * against the service in a ratio meant to show the service's cost (issue 28).
 * A response without `Content-Length`, or with more bytes than it declares, fails the request loudly.
 */
import { connect, type Socket } from 'node:net';

/** A `GET` of `url` with `headers`, as a function that sends one and resolves with the response's status code. */
export function rawHttpGet(url: URL, headers: Record<string, string>): () => Promise<number> {
  const lines = [`GET ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`, 'Connection: keep-alive'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  const bytes = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  const idle: Connection[] = [];
  return async () => {
    let connection = idle.pop();
    while (connection?.closed) connection = idle.pop();
    connection ??= await Connection.open(url);
    const status = await connection.send(bytes);
    idle.push(connection);
    return status;
  };
}

class Connection {
  private held: Buffer | undefined;
  /** Bytes the response in progress has in all (head and body), once its head is read. */
  private expected = -1;
  private status = 0;
  private waiting: { resolve: (status: number) => void; reject: (error: Error) => void } | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => this.fail(new Error('the server closed the connection')));
  }

  static open(url: URL): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname);
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new Connection(socket));
      });
    });
  }

  get closed(): boolean {
    return this.socket.destroyed;
  }

  send(request: Buffer): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(request);
    });
  }

  private received(chunk: Buffer): void {
    const data = this.held ? Buffer.concat([this.held, chunk]) : chunk;
    if (this.expected < 0) {
      const headEnd = data.indexOf('\r\n\r\n');
      if (headEnd < 0) {
        this.held = data;
        return;
      }
      const head = data.toString('latin1', 0, headEnd);
      const length = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
      if (!length) {
        this.fail(new Error(`a response without Content-Length: ${head.split('\r\n')[0]}`));
        return;
      }
      this.status = Number(head.slice(9, 12));
      this.expected = headEnd + 4 + Number(length[1]);
    }
    if (data.length < this.expected) {
      this.held = data;
      return;
    }
    if (data.length > this.expected) {
      this.fail(new Error('more bytes than the response declared'));
      return;
    }
    this.held = undefined;
    this.expected = -1;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.resolve(this.status);
  }

  private fail(error: Error): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    this.socket.destroy();
    waiting?.reject(error);
  }
}
