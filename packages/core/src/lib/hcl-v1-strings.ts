/**
 * String values of HCL v1 tokens: quoted strings with Go's escapes (`\n`, `\x41`, `\101`, `\u00e9`,
 * `\U0001F600`; no `\/`), where hcl copies `${ … }` sections verbatim, and heredocs (`<<EOF`, `<<-EOF`).
 */
import { decodeGoQuoted, GoSyntaxError, goUnquote as goStrconvUnquote } from './go-strings.ts';
import { HclSyntaxError } from './hcl-v1-error.ts';

const utf8 = new TextEncoder();
// ignoreBOM: a leading U+FEFF is part of the string, as in Go (the default decoder would drop it, and
// `"\ufeffkv/x"` would read as the path `kv/x`).
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** hcl's own unquote for HCL strings: Go escapes, `${ … }` kept as written. */
export function hclUnquote(quoted: string): string {
  const fail = () => new HclSyntaxError(`invalid string ${quoted.length > 40 ? `${quoted.slice(0, 40)}…` : quoted}`);
  if (quoted.length < 2 || !quoted.startsWith('"') || !quoted.endsWith('"')) throw fail();
  const body = quoted.slice(1, -1);
  if (!body.includes('$') && !body.includes('{') && body.includes('\n')) throw fail();
  // strconv's escapes, decoded hcl's way: `${ … }` kept as written, a surrogate escape as U+FFFD.
  return decodeGoQuoted(body, '"', fail, true).text;
}

/**
 * Go's strconv.Unquote, which hcl applies to JSON strings: `\ud83d` and every other surrogate escape is refused (in
 * Vault the unquote error is a panic in `Token.Value()`, so the policy write fails).
 */
export function goUnquote(quoted: string): string {
  try {
    return goStrconvUnquote(quoted);
  } catch (error) {
    if (!(error instanceof GoSyntaxError)) throw error;
    const shown = quoted.length > 40 ? `${quoted.slice(0, 40)}…` : quoted;
    const surrogate = /\\(u[dD][89a-fA-F][0-9a-fA-F]{2}|U0000[dD][89a-fA-F][0-9a-fA-F]{2})/.test(quoted);
    throw new HclSyntaxError(
      `invalid string ${shown}${surrogate ? ': a \\u escape of a UTF-16 surrogate half is not a character (Go refuses it)' : ''}`,
    );
  }
}

/**
 * A heredoc's value from its token text (`<<EOF\n…\nEOF\n`), as hcl computes it, byte offsets and all: `<<EOF`
 * keeps the lines (and any indentation of the closing marker); `<<-EOF` removes the closing marker's
 * indentation from every line when they all have it.
 */
export function heredocValue(text: string): string {
  const bytes = utf8.encode(text);
  const newline = bytes.indexOf(10);
  if (newline < 0) throw new HclSyntaxError('heredoc without a newline');
  const slice = (start: number, end: number) => {
    if (start > end || end > bytes.length) throw new HclSyntaxError('malformed heredoc');
    return decoder.decode(bytes.subarray(start, end));
  };
  if (bytes[2] !== 0x2d) return slice(newline + 1, bytes.length - newline + 1);
  const lines = slice(newline + 1, bytes.length - newline + 2).split('\n');
  const prefix = lines[lines.length - 1] as string;
  if (!lines.every((line) => line.startsWith(prefix))) {
    return slice(newline + 1, bytes.length - newline + 1).replace(/[ \t]+$/, '');
  }
  return lines.map((line, index) => (index === lines.length - 1 ? '' : line.slice(prefix.length))).join('\n');
}
