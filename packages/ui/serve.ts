import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ConsoleAssets, buildConsoleAssets } from './build.ts';
import { consoleContentSecurityPolicy, consoleSecurityHeaders } from './csp.ts';

/** Where the console finds the two services: the secrets service on its own origin (""), the scheduler's URL. */
export interface ConsoleConfig {
  secretsUrl: string;
  schedulerUrl: string;
}

/**
 * The media type of each file by name. A Map, as the assets below: a path is the attacker's string, and a lookup on a
 * plain object would find `constructor`, `__proto__` or `toString` on its prototype (issue 37 §4: `GET
 * /ui/constructor` served `Object` itself, whose length threw and ended the process).
 */
const types: ReadonlyMap<string, string> = new Map([
  ['index.html', 'text/html; charset=utf-8'],
  ['app.js', 'text/javascript; charset=utf-8'],
  ['app.css', 'text/css; charset=utf-8'],
  ['config.json', 'application/json'],
]);

/**
 * Serves the console under `/ui/` for `npm start` (Vault's UI path, on the secrets service's port): its three files,
 * `config.json` with the services' addresses, and the page itself for every other path under `/ui/` (the app routes
 * in the browser: an OIDC provider redirects back to `/ui/vault/auth/<mount>/oidc/callback`). Answers only GET and
 * HEAD; returns false for a path outside `/ui`, which the caller then hands to the API.
 */
export async function consoleHandler(
  config: () => ConsoleConfig,
): Promise<(request: IncomingMessage, response: ServerResponse) => boolean> {
  const built: ConsoleAssets = await buildConsoleAssets();
  const assets: ReadonlyMap<string, string> = new Map(Object.entries(built));
  const page = built['index.html'];
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
    const asset = name === 'config.json' ? JSON.stringify(config()) : assets.get(name);
    const body = asset ?? page;
    const type = (asset === undefined ? undefined : types.get(name)) ?? (types.get('index.html') as string);
    response.writeHead(200, { ...headers, 'Content-Type': type, 'Content-Length': String(Buffer.byteLength(body)) });
    response.end(request.method === 'HEAD' ? undefined : body);
    return true;
  };
}
