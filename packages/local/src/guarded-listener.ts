import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@keyhaven/core/lib/log.ts';

type Listener = (request: IncomingMessage, response: ServerResponse) => void;

/** The 500 a listener answers when its request's handling threw: a status, headers and a body, in the service's form. */
export type InternalError = () => { headers: Record<string, string>; body: string };

/**
 * A request listener that no request can end the process through (issue 37 §4): node calls a listener from its
 * parser, so a throw in it (the console's asset lookup once threw on `GET /ui/constructor`) is an uncaught exception
 * that ends `npm start` with both services, the jobs and DynamoDB Local. Here it is answered 500 (the connection
 * closed) and logged by method and message, never by path (old clients put tokens in paths).
 */
export function guardedListener(listener: Listener, internalError: InternalError, log: Logger): Listener {
  return (request, response) => {
    try {
      listener(request, response);
    } catch (error) {
      log.error('request listener failed', {
        method: request.method,
        error: error instanceof Error ? error.message : String(error),
      });
      if (response.headersSent) {
        response.destroy();
        return;
      }
      const { headers, body } = internalError();
      response.writeHead(500, { ...headers, Connection: 'close', 'Content-Length': String(Buffer.byteLength(body)) });
      response.end(body);
    }
  };
}
