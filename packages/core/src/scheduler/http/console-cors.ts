import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';

/**
 * Cross-origin access for the web console (issue 26), which is served beside the secrets service and calls this
 * service from that origin. Only the origins the operator names get an `Access-Control-Allow-Origin` answer (locally
 * the `npm start` console's own origin; on AWS the stage's console origin, `KEYHAVEN_CONSOLE_ORIGINS`); any other
 * page's script may still send a request, as it always could, but cannot read the answer. No credentials mode: the
 * console sends its token in `X-Nomad-Token`, never in a cookie, so a cross-site request carries no ambient authority.
 */
export function consoleCors(origins: () => readonly string[]): MiddlewareHandler {
  return cors({
    origin: (origin) => (origins().includes(origin) ? origin : null),
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'],
    allowHeaders: ['X-Nomad-Token', 'Content-Type'],
    exposeHeaders: ['X-Nomad-Index', 'X-Nomad-KnownLeader', 'X-Nomad-LastContact'],
    maxAge: 600,
  });
}

/** `KEYHAVEN_CONSOLE_ORIGINS`: comma-separated origins (`https://console.example.com`); each must be an origin alone. */
export function consoleOriginsFromEnvironment(env: Record<string, string | undefined>): string[] {
  const text = env.KEYHAVEN_CONSOLE_ORIGINS?.trim();
  if (!text) return [];
  return text.split(',').map((entry) => {
    const origin = entry.trim();
    let parsed: URL;
    try {
      parsed = new URL(origin);
    } catch {
      throw new Error(`KEYHAVEN_CONSOLE_ORIGINS: "${origin}" is not a URL`);
    }
    if (parsed.origin !== origin) throw new Error(`KEYHAVEN_CONSOLE_ORIGINS: "${origin}" must be an origin alone, like ${parsed.origin}`);
    return origin;
  });
}
