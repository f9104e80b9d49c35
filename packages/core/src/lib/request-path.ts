/**
 * One canonical path per request, decided once at the front of both services (the secrets front for the node app
 * and the Lambda adapter, the scheduler app's first middleware), before anything authorises, routes or forwards.
 *
 * What each spelling means (issue 23 §1):
 * - an encoded slash (`%2F`, `%2f`) or a backslash (`\`, `%5C`, `%5c`): refused (400). Once decoded, a name with a
 *   slash in it could not be told from two segments, and URL parsers turn a backslash into a slash.
 * - malformed percent-encoding: refused (400).
 * - an empty segment (`//`), a `.` or `..` segment (also spelt `%2e`): refused (400). Vault refuses `..` too;
 *   refusing is simpler and safer than canonicalising, and no client of ours sends them.
 * - one trailing `/`: removed, for every operation (LIST included), so `kv/app/admin/` IS `kv/app/admin` for the
 *   policy, the router and storage alike. A LIST loses nothing: the ACL checks a list as a directory
 *   (`acl.ts` appends the `/`), so `LIST kv/app` and `LIST kv/app/` were and are authorised the same, and the
 *   README's `path "kv/app" {list}` keeps working. A second trailing slash is an empty segment (refused).
 *
 * The path this returns is the only one the policy is checked against, the only one routed (the secrets router has
 * no optional trailing slash any more) and so the only source of captures and storage keys.
 */

/** The canonical path, in both forms, or what is wrong with the one sent. */
export type CanonicalPath =
  | {
      /** Percent-decoded: what the secrets pipeline authorises and routes. */
      decoded: string;
      /** Still percent-encoded as sent (minus the trailing slash): what write forwarding sends on. */
      encoded: string;
      problem?: undefined;
    }
  | { problem: string; decoded?: undefined; encoded?: undefined };

/** What an encoded slash where no name may hold one answers (400). */
export const encodedSlashRefused = 'an encoded slash (%2F) in the URL path is not allowed: a name cannot contain "/"';

/** The canonical form of a request path as sent (still percent-encoded, without its query). */
export function canonicalPath(sent: string): CanonicalPath {
  if (/%2f/i.test(sent))
    return {
      problem: encodedSlashRefused,
    };
  if (sent.includes('\\') || /%5c/i.test(sent)) return { problem: 'a backslash in the URL path is not allowed' };
  let decoded: string;
  try {
    decoded = decodeURIComponent(sent);
  } catch {
    return { problem: 'malformed percent-encoding in the URL path' };
  }
  if (!decoded.startsWith('/')) return { problem: 'the URL path must begin with "/"' };
  let encoded = sent;
  if (decoded.length > 1 && decoded.endsWith('/')) {
    decoded = decoded.slice(0, -1);
    encoded = encoded.slice(0, -1);
  }
  const segments = decoded.slice(1).split('/');
  if (decoded !== '/' && segments.includes(''))
    return {
      problem: 'an empty segment ("//") in the URL path is not allowed',
    };
  if (segments.some((segment) => segment === '.' || segment === '..')) {
    return { problem: 'a "." or ".." segment in the URL path is not allowed' };
  }
  return { decoded, encoded };
}

/** A canonical path as segments, each percent-decoded alone, or what is wrong with the path sent. */
export type SegmentedPath =
  | { decoded: string; encoded: string; segments: string[]; problem?: undefined }
  | { problem: string; decoded?: undefined; encoded?: undefined; segments?: undefined };

/**
 * The scheduler's canonical path (Nomad's HTTP API takes a job ID URL-escaped in the path, and a dispatched job's ID
 * holds a `/`): the path split at its `/`s as sent, then each segment percent-decoded alone, so an encoded slash
 * (`%2F`) stays inside its segment — a name holding a `/` — and never makes a segment of its own. The route table
 * (`scheduler/http/route.ts`) lets only a parameter declared for it hold one; anywhere else it is 400 as before.
 * Everything else is refused as `canonicalPath` refuses it: a backslash (or `%5C`), malformed percent-encoding, and
 * an empty, `.` or `..` segment — also one inside a segment's encoded slashes (`a%2F..%2Fb`, `%2e%2e%2Fx`), so no
 * spelling of a name walks anywhere. One trailing `/` is removed (the front refuses it).
 */
export function segmentedPath(sent: string): SegmentedPath {
  if (sent.includes('\\') || /%5c/i.test(sent)) return { problem: 'a backslash in the URL path is not allowed' };
  if (!sent.startsWith('/')) return { problem: 'the URL path must begin with "/"' };
  const encoded = sent.length > 1 && sent.endsWith('/') ? sent.slice(0, -1) : sent;
  const segments: string[] = [];
  for (const part of encoded === '/' ? [] : encoded.slice(1).split('/')) {
    let segment: string;
    try {
      segment = decodeURIComponent(part);
    } catch {
      return { problem: 'malformed percent-encoding in the URL path' };
    }
    const names = segment.split('/');
    if (names.includes('')) return { problem: 'an empty segment ("//") in the URL path is not allowed' };
    if (names.some((name) => name === '.' || name === '..'))
      return { problem: 'a "." or ".." segment in the URL path is not allowed' };
    segments.push(segment);
  }
  return { decoded: `/${segments.join('/')}`, encoded, segments };
}

/**
 * The path of a decoded path that is already canonical, else what is wrong: the secrets router's own check, for
 * callers that hand the pipeline a decoded path without going through the front (it removes the one trailing slash
 * the front would have removed, and refuses what the front would have refused).
 */
export function canonicalDecodedPath(decoded: string): CanonicalPath {
  if (decoded.includes('\\')) return { problem: 'a backslash in the URL path is not allowed' };
  let path = decoded;
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  const segments = path.replace(/^\//, '').split('/');
  if (path !== '/' && segments.includes(''))
    return {
      problem: 'an empty segment ("//") in the URL path is not allowed',
    };
  if (segments.some((segment) => segment === '.' || segment === '..')) {
    return { problem: 'a "." or ".." segment in the URL path is not allowed' };
  }
  return { decoded: path, encoded: path };
}

/**
 * The path as the client sent it, before any URL parser resolved dot segments or turned `\` into `/`: the node
 * server's raw request line, or API Gateway's `rawPath`; else the web Request's own (already parsed) path.
 */
export function sentPath(env: unknown, url: string): string {
  const incoming = (env as { incoming?: { url?: unknown } } | undefined)?.incoming?.url;
  if (typeof incoming === 'string' && incoming.startsWith('/')) return pathOf(incoming);
  const rawPath = (env as { event?: { rawPath?: unknown } } | undefined)?.event?.rawPath;
  if (typeof rawPath === 'string' && rawPath.startsWith('/')) return rawPath;
  const afterScheme = url.indexOf('//');
  const start = url.indexOf('/', afterScheme === -1 ? 0 : afterScheme + 2);
  return start === -1 ? '/' : pathOf(url.slice(start));
}

const pathOf = (target: string) => {
  const queryAt = target.indexOf('?');
  return queryAt === -1 ? target : target.slice(0, queryAt);
};

/**
 * Where a forwarded request goes: the configured authoritative URL with the canonical path (and query) appended, by
 * concatenation, never by URL resolution, which would take `//host/...` as another host. The result must keep the
 * configured origin; a path that does not begin with exactly one `/` (which the canonical path never does) is
 * not forwarded (undefined). Shared by both services' write forwarding.
 */
export function forwardTarget(authoritativeUrl: string, path: string, search: string): URL | undefined {
  if (!path.startsWith('/') || path.startsWith('//') || path.includes('\\')) return undefined;
  const base = new URL(authoritativeUrl);
  const target = new URL(`${base.origin}${base.pathname.replace(/\/+$/, '')}${path}${search}`);
  return target.origin === base.origin ? target : undefined;
}
