/**
 * Rewrites the request line `LIST /path HTTP/1.1` to `GET /path?list=true HTTP/1.1` (what Vault's own client
 * sends for LIST) on one connection's bytes, before Node's HTTP parser, which refuses the method, sees them.
 *
 * Only request lines are rewritten, wherever the socket happens to split the bytes: the rewriter follows
 * HTTP/1.1 message framing (RFC 9112): a request line, header fields up to an empty line, then a body of
 * `Content-Length` bytes or in the chunked coding (chunk sizes, data, trailer fields), then the next request
 * on the kept-alive connection. A body that contains `LIST /x y`, at a packet start or not, passes unchanged.
 * When the framing is not one it understands (a malformed message, an upgrade, CONNECT), it stops rewriting
 * and passes every later byte through: the HTTP parser refuses a malformed request itself.
 *
 * Hand-written: the HTTP parsers on npm (llhttp inside Node) parse into messages and cannot hand the bytes
 * back unchanged; this needs only where each message starts.
 */

type State =
  | 'request-line'
  | 'headers'
  | 'body'
  | 'chunk-size'
  | 'chunk-data'
  | 'chunk-data-end'
  | 'trailers'
  | 'passthrough';

/** Longer than Node's whole header limit (16 KiB): a line this long is refused by the parser anyway. */
const MAX_LINE_BYTES = 64 * 1024;
const LF = 0x0a;

export class ListRequestRewriter {
  private state: State = 'request-line';
  /** The current line's bytes so far (a request line is held back until complete; others are already passed on). */
  private line: Buffer[] = [];
  private lineBytes = 0;
  /** Body or chunk bytes still to pass. */
  private remaining = 0;
  private message = { contentLength: undefined as number | undefined, chunked: false, upgrade: false, invalid: false };

  /** The bytes to hand to the HTTP parser for this chunk from the socket (possibly none yet). */
  push(chunk: Buffer): Buffer {
    const out: Buffer[] = [];
    let offset = 0;
    while (offset < chunk.length) {
      if (this.state === 'passthrough') {
        out.push(chunk.subarray(offset));
        break;
      }
      if (this.state === 'body' || this.state === 'chunk-data') {
        const length = Math.min(this.remaining, chunk.length - offset);
        out.push(chunk.subarray(offset, offset + length));
        offset += length;
        this.remaining -= length;
        if (this.remaining === 0) this.state = this.state === 'body' ? 'request-line' : 'chunk-data-end';
        continue;
      }
      const lineFeed = chunk.indexOf(LF, offset);
      const end = lineFeed === -1 ? chunk.length : lineFeed + 1;
      const piece = chunk.subarray(offset, end);
      offset = end;
      if (this.state !== 'request-line') out.push(piece);
      this.line.push(piece);
      this.lineBytes += piece.length;
      if (lineFeed === -1) {
        if (this.lineBytes > MAX_LINE_BYTES) this.giveUp(out);
        continue;
      }
      const raw = Buffer.concat(this.line);
      this.line = [];
      this.lineBytes = 0;
      const text = raw.toString('latin1');
      const content = text.endsWith('\r\n') ? text.slice(0, -2) : text.slice(0, -1);
      if (this.state === 'request-line') out.push(this.requestLine(raw, content, text.slice(content.length)));
      else this.fieldOrSizeLine(content);
    }
    return out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out);
  }

  /** The bytes of an unfinished line that were held back, when the connection ends. */
  flush(): Buffer {
    const held = this.state === 'request-line' ? Buffer.concat(this.line) : Buffer.alloc(0);
    this.line = [];
    this.lineBytes = 0;
    return held;
  }

  private giveUp(out: Buffer[]) {
    if (this.state === 'request-line') out.push(Buffer.concat(this.line));
    this.line = [];
    this.lineBytes = 0;
    this.state = 'passthrough';
  }

  private requestLine(raw: Buffer, content: string, ending: string): Buffer {
    if (content === '') return raw; // an empty line before a request is allowed (RFC 9112 section 2.2)
    this.message = { contentLength: undefined, chunked: false, upgrade: false, invalid: false };
    const match = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) (HTTP\/\d\.\d)$/.exec(content);
    if (!match || match[1] === 'CONNECT') {
      this.state = 'passthrough';
      return raw;
    }
    this.state = 'headers';
    const [, method, target, version] = match as unknown as [string, string, string, string];
    if (method !== 'LIST') return raw;
    return Buffer.from(`GET ${target}${target.includes('?') ? '&' : '?'}list=true ${version}${ending}`, 'latin1');
  }

  private fieldOrSizeLine(content: string) {
    switch (this.state) {
      case 'headers':
        if (content === '') this.endOfHeaders();
        else this.headerField(content);
        return;
      case 'chunk-size': {
        const match = /^([0-9A-Fa-f]{1,12})[ \t]*(?:;.*)?$/.exec(content);
        if (!match) {
          this.state = 'passthrough';
          return;
        }
        const size = Number.parseInt(match[1] as string, 16);
        if (size === 0) {
          this.state = 'trailers';
        } else {
          this.state = 'chunk-data';
          this.remaining = size;
        }
        return;
      }
      case 'chunk-data-end':
        this.state = content === '' ? 'chunk-size' : 'passthrough';
        return;
      case 'trailers':
        if (content === '') this.state = 'request-line';
        return;
    }
  }

  private headerField(content: string) {
    const colon = content.indexOf(':');
    if (colon <= 0 || /^[ \t]/.test(content)) {
      this.message.invalid = true; // no name, or an obsolete folded line
      return;
    }
    const name = content.slice(0, colon).toLowerCase();
    const value = content.slice(colon + 1).trim();
    if (name === 'content-length') {
      const length = /^\d{1,15}$/.test(value) ? Number(value) : Number.NaN;
      if (Number.isNaN(length) || (this.message.contentLength !== undefined && this.message.contentLength !== length)) {
        this.message.invalid = true;
      }
      this.message.contentLength = length;
    } else if (name === 'transfer-encoding') {
      const codings = value
        .toLowerCase()
        .split(',')
        .map((coding) => coding.trim());
      if (codings[codings.length - 1] === 'chunked') this.message.chunked = true;
      else this.message.invalid = true; // a request body must end in chunked (RFC 9112 section 6.3)
    } else if (name === 'upgrade') {
      this.message.upgrade = true;
    }
  }

  private endOfHeaders() {
    const { contentLength, chunked, upgrade, invalid } = this.message;
    if (invalid || upgrade || (chunked && contentLength !== undefined)) {
      this.state = 'passthrough';
    } else if (chunked) {
      this.state = 'chunk-size';
    } else if (contentLength) {
      this.state = 'body';
      this.remaining = contentLength;
    } else {
      this.state = 'request-line';
    }
  }
}
