import type { HttpReply, HttpRequest } from '../../front/exchange.ts';

/**
 * Cross-origin access for the web console (issue 26), which is served beside the secrets service and calls this
 * service from that origin. Only the origins the operator names get an `Access-Control-Allow-Origin` answer (locally
 * the `npm start` console's own origin; on AWS the stage's console origin, `KEYHAVEN_CONSOLE_ORIGINS`); any other
 * page's script may still send a request, as it always could, but cannot read the answer. No credentials mode: the
 * console sends its token in `X-Nomad-Token`, never in a cookie, so a cross-site request carries no ambient authority.
 *
 * Every OPTIONS request is a preflight, answered 204 before anything else looks at it; every other answer gets the
 * allowed origin (if the request's is one), the exposed headers and `Vary: Origin`.
 */
export function consoleCors(origins: () => readonly string[]) {
  const allowedOrigin = (request: HttpRequest) => {
    const origin = request.headers.get('origin') ?? '';
    return origins().includes(origin) ? origin : undefined;
  };
  const common = (request: HttpRequest): Record<string, string> => {
    const origin = allowedOrigin(request);
    return {
      ...(origin ? { 'Access-Control-Allow-Origin': origin } : {}),
      'Access-Control-Expose-Headers': 'X-Nomad-Index,X-Nomad-KnownLeader,X-Nomad-LastContact,X-Nomad-NextToken',
    };
  };
  return {
    /** The answer to a preflight (any OPTIONS request); undefined for every other request. */
    preflight(request: HttpRequest): HttpReply | undefined {
      if (request.method !== 'OPTIONS') return undefined;
      return {
        status: 204,
        headers: {
          ...common(request),
          Vary: 'Origin, Access-Control-Request-Headers',
          'Access-Control-Max-Age': '600',
          'Access-Control-Allow-Methods': 'GET,HEAD,POST,PUT,DELETE',
          'Access-Control-Allow-Headers': 'X-Nomad-Token,Content-Type',
        },
        body: undefined,
      };
    },
    /** The reply with the CORS headers of its request. */
    answer(request: HttpRequest, reply: HttpReply): HttpReply {
      const vary = Object.entries(reply.headers).find(([name]) => name.toLowerCase() === 'vary')?.[1];
      return { ...reply, headers: { ...reply.headers, ...common(request), Vary: vary ? `${vary}, Origin` : 'Origin' } };
    },
  };
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
    if (parsed.origin !== origin)
      throw new Error(`KEYHAVEN_CONSOLE_ORIGINS: "${origin}" must be an origin alone, like ${parsed.origin}`);
    return origin;
  });
}
