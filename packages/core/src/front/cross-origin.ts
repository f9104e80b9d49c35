import type { HttpRequest } from './exchange.ts';

/**
 * What a browser on another origin may not do to either service (issue 37 §4): change state. A page anywhere can
 * make the developer's browser send a "simple" request (a form post, `fetch` with `mode: "no-cors"` and a text body)
 * to the loopback listeners or to a deployed service without a preflight; no token rides along (the console keeps
 * its tokens in session storage, never a cookie), but an endpoint that needs none (`acl/bootstrap`, `sys/init`,
 * logins) would act on it. So a request that is not a read (GET, HEAD, OPTIONS, LIST) is refused with 403 when the
 * browser says it comes from another site (`Sec-Fetch-Site: cross-site` or `same-site`, which a page cannot forge)
 * or carries an `Origin` that is neither one of the console's (`allowedOrigins`) nor the request's own
 * (`Sec-Fetch-Site: same-origin`, or the Origin's host equal to `Host`). `Origin: null` is foreign.
 *
 * Vault and Nomad check neither (Vault's CORS setting only adds headers); this is stricter, and says so in
 * docs/security.md. Clients that are not browsers send no Origin and no Fetch Metadata, and are not affected.
 *
 * A second, independent line (`contentTypeRefusal`): a write whose body is declared as a type neither service reads
 * (`text/plain`, `multipart/form-data`, anything but JSON, a `+json` type or a form, the one simple type Vault
 * also reads) is a 415, so a browser that sent no Origin could still not pass a text body off as JSON.
 */
export interface CrossOriginRefusal {
  status: 403;
  message: string;
}

const readMethods: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'LIST']);

export function crossOriginRefusal(
  request: Pick<HttpRequest, 'method' | 'headers'>,
  allowedOrigins: readonly string[],
): CrossOriginRefusal | undefined {
  if (readMethods.has(request.method.toUpperCase())) return undefined;
  const { headers } = request;
  const origin = headers.get('origin');
  const site = headers.get('sec-fetch-site')?.trim().toLowerCase();
  if (origin === null || !allowedOrigins.includes(origin)) {
    if (site === 'cross-site' || site === 'same-site')
      return { status: 403, message: `a ${site} request may not change state (Sec-Fetch-Site: ${site})` };
    if (origin !== null && site !== 'same-origin' && !sameOrigin(origin, headers.get('host')))
      return { status: 403, message: `a request from origin "${origin}" may not change state` };
  }
  return undefined;
}

export interface ContentTypeRefusal {
  status: 415;
  message: string;
}

/** Writes whose body a handler reads; a DELETE's body is never read (`exchange.ts` `queryOnlyMethods`). */
const bodyMethods: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH']);

/**
 * The media types a write may declare: JSON, any `+json` type (`application/merge-patch+json`), and the form type
 * (curl's default for `-d`, which Vault reads too). No `Content-Type` at all is taken: the Vault and Nomad CLIs send
 * none.
 */
export function contentTypeRefusal(request: Pick<HttpRequest, 'method' | 'headers'>): ContentTypeRefusal | undefined {
  if (!bodyMethods.has(request.method.toUpperCase())) return undefined;
  const declared = request.headers.get('content-type');
  if (declared === null || declared.trim() === '') return undefined;
  const type = (declared.split(';')[0] ?? '').trim().toLowerCase();
  if (type === 'application/json' || type === 'application/x-www-form-urlencoded') return undefined;
  if (/^[a-z0-9!#$&^_.-]+\/[a-z0-9!#$&^_.-]+\+json$/.test(type)) return undefined;
  return {
    status: 415,
    message: `unsupported Content-Type "${declared.slice(0, 100)}": send the body as application/json`,
  };
}

/** Whether `origin` (`http://host:port`) names the host the request was sent to. */
function sameOrigin(origin: string, host: string | null): boolean {
  if (!host) return false;
  try {
    return new URL(origin).host === host.trim().toLowerCase();
  } catch {
    return false;
  }
}
