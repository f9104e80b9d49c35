import { type Agent, request as httpRequest } from 'node:http';

/**
 * One request through a keep-alive agent (node's http.Agent with keepAlive, as SDKs pool connections): the status,
 * the body, the Connection header and the local port of the socket it went out on, or the error it met.
 */
export function keepAliveRequest(
  agent: Agent,
  port: number,
  method: string,
  urlPath: string,
  body: string | undefined,
  headers: Record<string, string> = {},
): Promise<
  | {
      status: number;
      text: string;
      connection: string | undefined;
      localPort: number | undefined;
    }
  | { error: string }
> {
  return new Promise((resolve) => {
    const sent = httpRequest({ agent, host: '127.0.0.1', port, method, path: urlPath, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          text: Buffer.concat(chunks).toString(),
          connection: response.headers.connection,
          localPort: sent.socket?.localPort,
        }),
      );
      response.on('error', (error) =>
        resolve({
          error: (error as NodeJS.ErrnoException).code ?? error.message,
        }),
      );
    });
    sent.on('error', (error) =>
      resolve({
        error: (error as NodeJS.ErrnoException).code ?? error.message,
      }),
    );
    sent.end(body);
  });
}
