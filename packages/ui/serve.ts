import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ConsoleAssets, buildConsoleAssets } from './build.ts';
import { consoleContentSecurityPolicy, consoleSecurityHeaders } from './csp.ts';

/** Where the console finds the two services: the secrets service on its own origin (""), the scheduler's URL. */
export interface ConsoleConfig {
  secretsUrl: string;
  schedulerUrl: string;
}

const types: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'config.json': 'application/json',
};

/**
 * Serves the console under `/ui/` for `npm start` (Vault's UI path, on the secrets service's port): its three files,
 * `config.json` with the services' addresses, and the page itself for every other path under `/ui/` (the app routes
 * in the browser: an OIDC provider redirects back to `/ui/vault/auth/<mount>/oidc/callback`). Answers only GET and
 * HEAD; returns false for a path outside `/ui`, which the caller then hands to the API.
 */
export async function consoleHandler(
  config: () => ConsoleConfig,
): Promise<(request: IncomingMessage, response: ServerResponse) => boolean> {
  const assets: ConsoleAssets = await buildConsoleAssets();
  return (request, response) => {
    const target = request.url ?? '';
    const pathname = target.split('?')[0] ?? '';
    if (pathname !== '/ui' && !pathname.startsWith('/ui/')) return false;
    const { schedulerUrl } = config();
    const headers: Record<string, string> = {
      ...consoleSecurityHeaders,
      'Content-Security-Policy': consoleContentSecurityPolicy(schedulerUrl),
      'Cache-Control': 'no-store',
    };
    if (pathname === '/ui') {
      response.writeHead(308, { ...headers, Location: '/ui/' }).end();
      return true;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response
        .writeHead(405, { ...headers, Allow: 'GET, HEAD', 'Content-Type': 'text/plain' })
        .end('the console answers GET and HEAD only\n');
      return true;
    }
    const name = pathname.slice('/ui/'.length);
    const body =
      name === 'config.json'
        ? JSON.stringify(config())
        : name in assets
          ? assets[name as keyof ConsoleAssets]
          : assets['index.html'];
    const type = types[name in types ? name : 'index.html'] as string;
    response.writeHead(200, { ...headers, 'Content-Type': type, 'Content-Length': String(Buffer.byteLength(body)) });
    response.end(request.method === 'HEAD' ? undefined : body);
    return true;
  };
}
