/**
 * Answers from other servers read with a cap (issue 39 §3). A key set, a discovery document or an API's answer is a
 * few kilobytes; read whole, a URL that streams hundreds of megabytes grows the process until Lambda kills it, and a
 * login that refetches repeats it. Past its cap a body is cut off (the connection dropped, nothing more read) and the
 * call fails with `BodyTooLarge`, which names the cap.
 */

/** OIDC discovery documents, key sets and token endpoint answers: a few kB; 256 KiB is generous. */
export const maxDocumentBytes = 256 * 1024;
/** The engines' upstream APIs (Google's IAM, the mesh server): their largest answers (key lists, policies) are far below. */
export const maxApiAnswerBytes = 1024 * 1024;

export class BodyTooLarge extends Error {
  constructor(
    readonly what: string,
    readonly limit: number,
  ) {
    super(`the answer from ${what} is larger than ${limit} bytes: refused unread`);
  }
}

/** The body of a web `Response`, at most `limit` bytes (a declared larger `content-length` is refused before reading). */
export async function readBounded(response: Response, limit: number, what: string): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > limit) {
    await response.body?.cancel().catch(() => undefined);
    throw new BodyTooLarge(what, limit);
  }
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw new BodyTooLarge(what, limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** `readBounded` as text (UTF-8). */
export async function readBoundedText(response: Response, limit: number, what: string): Promise<string> {
  return Buffer.from(await readBounded(response, limit, what)).toString('utf8');
}

/** The same response with its body read (at most `limit` bytes), for callers that read it themselves (jose, openid-client). */
export async function boundedResponse(response: Response, limit: number, what: string): Promise<Response> {
  const status = response.status;
  const noBody = status === 204 || status === 304 || response.body === null;
  const body = noBody ? null : await readBounded(response, limit, what);
  return new Response(body as BodyInit | null, {
    status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/** Counts the bytes of a node stream's chunks; past `limit`, calls `exceeded` once (which should destroy the stream). */
export function byteCounter(limit: number, exceeded: () => void): (chunk: Buffer) => boolean {
  let total = 0;
  let over = false;
  return (chunk) => {
    if (over) return false;
    total += chunk.length;
    if (total <= limit) return true;
    over = true;
    exceeded();
    return false;
  };
}
