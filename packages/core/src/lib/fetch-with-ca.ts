import { X509Certificate } from 'node:crypto';
import { BodyTooLarge, boundedResponse, byteCounter, maxDocumentBytes } from './bounded-body.ts';

// Taken as the builtins' CommonJS objects: an ESM `import` of node:http builds its module facade, which reads every
// export and so loads undici (~20 ms of a Lambda cold start) for exports nobody here uses.
const { request: httpRequest } = process.getBuiltinModule('node:http');
const { request: httpsRequest } = process.getBuiltinModule('node:https');

/** The fetch signature both jose (`customFetch`) and openid-client (`customFetch`) call. */
export type FetchLike = (
  url: string,
  options: { method?: string; headers?: HeadersInit; body?: unknown; signal?: AbortSignal; redirect?: RequestRedirect },
) => Promise<Response>;

/** Splits a PEM bundle into certificates; throws when a block does not parse, so a bad CA is refused on write. */
export function parseCaBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error('no PEM certificate found');
  return blocks.map((block) => new X509Certificate(block));
}

/**
 * `fetch` that trusts exactly the given CA certificates (`oidc_discovery_ca_pem`, `jwks_ca_pem`), else the
 * platform's fetch. Node's global fetch takes no per-request CA without an undici dispatcher the project does
 * not depend on, so this goes through `node:https`, which takes `ca` directly. Either way an answer's body is read
 * only up to `limit` bytes (`lib/bounded-body.ts`): past it the connection is dropped and the call fails.
 */
export function fetchWithCa(caPem: string | undefined, limit = maxDocumentBytes): FetchLike {
  if (!caPem)
    return async (url, options) => boundedResponse(await fetch(url, options as RequestInit), limit, String(url));
  return async (url, options) => {
    const target = new URL(url);
    const headers = Object.fromEntries(new Headers(options.headers).entries());
    const raw = options.body;
    const body =
      raw === undefined || raw === null ? undefined : raw instanceof Uint8Array ? Buffer.from(raw) : String(raw);
    if (body !== undefined && !headers['content-type'] && options.body instanceof URLSearchParams) {
      headers['content-type'] = 'application/x-www-form-urlencoded;charset=UTF-8';
    }
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Response>((resolve, reject) => {
      const outgoing = send(
        target,
        { method: options.method ?? 'GET', headers, ca: caPem, signal: options.signal },
        (incoming) => {
          const chunks: Buffer[] = [];
          const refuse = () => {
            reject(new BodyTooLarge(String(url), limit));
            outgoing.destroy();
          };
          if (Number(incoming.headers['content-length'] ?? Number.NaN) > limit) return refuse();
          const within = byteCounter(limit, refuse);
          incoming.on('data', (chunk: Buffer) => {
            if (within(chunk)) chunks.push(chunk);
          });
          incoming.on('error', reject);
          incoming.on('end', () => {
            const responseHeaders = new Headers();
            for (const [name, value] of Object.entries(incoming.headers)) {
              for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value])
                responseHeaders.append(name, item);
            }
            const status = incoming.statusCode ?? 502;
            const noBody = status === 204 || status === 304;
            resolve(new Response(noBody ? null : Buffer.concat(chunks), { status, headers: responseHeaders }));
          });
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  };
}
