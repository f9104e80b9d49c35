import { badRequest } from './errors.ts';

/**
 * The request body as Vault decodes it (`http/logical.go`, `isForm` in `http/handler.go`): a form only when the
 * media type is `application/x-www-form-urlencoded` and the body does not begin, after JSON whitespace, with `{`
 * or `[`; JSON in every other case, whatever the Content-Type says. `curl -d '{…}'` sends the form media type,
 * and every example in Vault's documentation relies on the body still being read as JSON.
 *
 * A body that cannot be decoded is a 400 naming the problem, never an empty body: a request whose fields were
 * not understood must not run with defaults (a token create would inherit its caller's policies).
 */
export function decodeBody(body: string, contentType: string | null): Record<string, unknown> {
  if (isForm(body, contentType)) return decodeForm(body);
  return decodeJson(body);
}

const formMediaType = 'application/x-www-form-urlencoded';

export function isForm(body: string, contentType: string | null): boolean {
  if (mediaType(contentType) !== formMediaType) return false;
  const first = /[^ \t\n\r]/.exec(body)?.[0];
  return first !== '{' && first !== '[';
}

/** The media type without parameters, lower-cased (`Application/X-WWW-Form-Urlencoded; charset=utf-8`). */
function mediaType(contentType: string | null): string | undefined {
  return contentType?.split(';', 1)[0]?.trim().toLowerCase();
}

/** Real requests nest a few levels; deeper input only exhausts recursive code (JSON.stringify, marshalling) downstream. */
export const maxBodyDepth = 100;

function decodeJson(body: string): Record<string, unknown> {
  // JSON's own whitespace only: Go's decoder refuses anything else before the value (a byte-order mark, say).
  if (/^[ \t\n\r]*$/.test(body)) return {};
  if (nestingDepth(body) > maxBodyDepth) {
    throw badRequest(`failed to parse JSON input: nested deeper than ${maxBodyDepth} levels`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (error) {
    throw badRequest(`failed to parse JSON input: ${jsonSyntaxProblem((error as Error).message)}`);
  }
  // Go decodes `null` into a map as no map at all: an empty request, as Vault treats it.
  if (parsed === null) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw badRequest('failed to parse JSON input: the body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/**
 * JSON.parse's message without the body it quotes (`Unexpected token 'h', "{"password": hvs…" is not valid JSON`):
 * the error is answered and audited in the clear, so a secret in a malformed body must not appear in it. Only a
 * message made of words, a position and quoted structural characters is kept.
 */
function jsonSyntaxProblem(message: string): string {
  const quotesOnlyStructure = [...message.matchAll(/'([^']*)'/g)].every(([, quoted]) =>
    /^[,{}[\]:]$/.test(quoted ?? ''),
  );
  return /^[A-Za-z\d ,'{}[\]:()-]*$/.test(message) && quotesOnlyStructure ? message : 'the body is not valid JSON';
}

/**
 * A form body as Go's `url.ParseQuery` reads it (Vault's `parseFormRequest`): `&`-separated, `+` is a space,
 * a `;` in a pair or a bad `%` escape is an error, and a key given more than once is its values joined by commas
 * (which every list field accepts).
 */
function decodeForm(body: string): Record<string, unknown> {
  const values = new Map<string, string[]>();
  for (const pair of body.split('&')) {
    if (pair.includes(';')) throw badRequest('failed to parse form data: invalid semicolon separator');
    if (pair === '') continue;
    const cut = pair.indexOf('=');
    const key = unescapeFormPart(cut < 0 ? pair : pair.slice(0, cut));
    const value = cut < 0 ? '' : unescapeFormPart(pair.slice(cut + 1));
    values.set(key, [...(values.get(key) ?? []), value]);
  }
  const data: Record<string, unknown> = {};
  for (const [key, list] of values) {
    // A plain object would let a key named `__proto__` set the prototype instead of a field.
    Object.defineProperty(data, key, { value: list.join(','), enumerable: true, writable: true, configurable: true });
  }
  return data;
}

function unescapeFormPart(text: string): string {
  const bytes: number[] = [];
  for (let index = 0; index < text.length; index++) {
    const char = text[index] as string;
    if (char === '%') {
      const hex = text.slice(index + 1, index + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex))
        throw badRequest(`failed to parse form data: invalid URL escape "${text.slice(index, index + 3)}"`);
      bytes.push(Number.parseInt(hex, 16));
      index += 2;
    } else if (char === '+') {
      bytes.push(0x20);
    } else {
      bytes.push(...Buffer.from(char, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/**
 * The fields a request sets: a field sent as `null` is not set (hvac sends `null` for every argument left out,
 * and Vault's field decoding treats it as absent), so defaults and "required" apply as if it were missing.
 * Only top-level fields: a `null` inside a value (a kv secret, a map) is data.
 */
export function withoutNulls(fields: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value === null) continue;
    Object.defineProperty(kept, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return kept;
}

/** `list` in a query string, as Go's `strconv.ParseBool` reads it (Vault answers 400 to anything else). */
export function parseListFlag(value: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  throw badRequest(
    `invalid value for "list": ${JSON.stringify(value)} is not a boolean (1, t, true, True, TRUE or 0, f, false, False, FALSE)`,
  );
}

/** The deepest nesting of arrays and objects in a JSON text, without parsing it (strings are skipped). */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index);
    if (inString) {
      if (char === 0x5c)
        index++; // backslash: skip the escaped character
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) {
      inString = true;
    } else if (char === 0x5b || char === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (char === 0x5d || char === 0x7d) {
      depth--;
    }
  }
  return deepest;
}
