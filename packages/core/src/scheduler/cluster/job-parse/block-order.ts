/**
 * The blocks of a job file in the order they are written. The HCL parser answers labelled blocks as a JSON object
 * keyed by label, and Go's encoder writes an object's keys sorted: `task "web"` then `task "db"` come back as `db`,
 * `web`. Nomad keeps the file's order (the first group is the first written), so this reads the order back from the
 * source: a scan of the file's structure only (block headers, bodies, and where each attribute's expression ends,
 * past strings, templates, heredocs and comments). It runs only on text the HCL parser has already accepted, so it
 * needs to recognise valid HCL only.
 */

export interface BlockNode {
  type: string;
  labels: string[];
  children: BlockNode[];
}

const identifierStart = /[A-Za-z_]/;
const identifierPart = /[A-Za-z0-9_-]/;

class Scanner {
  index = 0;
  constructor(readonly text: string) {}

  get char(): string {
    return this.text[this.index] ?? '';
  }

  /** Past spaces and comments; newlines too when `newlines`. */
  skipSpace(newlines: boolean): void {
    for (;;) {
      const char = this.char;
      if (char === ' ' || char === '\t' || char === '\r' || (newlines && char === '\n')) this.index++;
      else if (char === '#' || (char === '/' && this.text[this.index + 1] === '/')) {
        while (this.index < this.text.length && this.char !== '\n') this.index++;
      } else if (char === '/' && this.text[this.index + 1] === '*') {
        const end = this.text.indexOf('*/', this.index + 2);
        this.index = end < 0 ? this.text.length : end + 2;
      } else return;
    }
  }

  identifier(): string {
    const start = this.index;
    while (identifierPart.test(this.char)) this.index++;
    return this.text.slice(start, this.index);
  }

  /** A quoted string starting at `"`: its text with escapes read (labels hold no templates). */
  quoted(): string {
    this.index++;
    let out = '';
    while (this.index < this.text.length && this.char !== '"') {
      if (this.char === '\\') {
        const next = this.text[this.index + 1] ?? '';
        out += next === 'n' ? '\n' : next === 't' ? '\t' : next;
        this.index += 2;
      } else if ((this.char === '$' || this.char === '%') && this.text.startsWith(`${this.char}{`, this.index + 1)) {
        out += `${this.char}{`;
        this.index += 3;
      } else if ((this.char === '$' || this.char === '%') && this.text[this.index + 1] === '{') {
        this.index += 2;
        this.expression(['}']);
        this.index++;
      } else out += this.text[this.index++];
    }
    this.index++;
    return out;
  }

  heredoc(): void {
    const match = /^<<-?([A-Za-z_][A-Za-z0-9_-]*)\r?\n/.exec(this.text.slice(this.index));
    if (!match) {
      this.index += 2;
      return;
    }
    this.index += match[0].length;
    for (;;) {
      const end = this.text.indexOf('\n', this.index);
      const line = this.text.slice(this.index, end < 0 ? this.text.length : end);
      this.index = end < 0 ? this.text.length : end + 1;
      if (line.trim() === match[1] || end < 0) return;
    }
  }

  /** Past an expression, up to (not over) one of `stops` at depth 0; a newline at depth 0 ends an attribute's. */
  expression(stops: string[]): void {
    let depth = 0;
    while (this.index < this.text.length) {
      this.skipSpace(depth > 0 || !stops.includes('\n'));
      const char = this.char;
      if (depth === 0 && stops.includes(char)) return;
      if (char === '"') this.quoted();
      else if (char === '<' && this.text[this.index + 1] === '<') this.heredoc();
      else if (char === '(' || char === '[' || char === '{') {
        depth++;
        this.index++;
      } else if (char === ')' || char === ']' || char === '}') {
        depth--;
        this.index++;
      } else this.index++;
    }
  }

  /** A body's items up to its `}` (or the end of the file), its blocks appended to `node`. */
  body(node: BlockNode): void {
    for (;;) {
      this.skipSpace(true);
      if (this.index >= this.text.length) return;
      if (this.char === '}') {
        this.index++;
        return;
      }
      if (!identifierStart.test(this.char)) {
        this.index++;
        continue;
      }
      const name = this.identifier();
      this.skipSpace(false);
      if (this.char === '=' || this.char === ':') {
        this.index++;
        this.expression(['\n', '}']);
        continue;
      }
      const labels: string[] = [];
      while (this.index < this.text.length && this.char !== '{') {
        if (this.char === '"') labels.push(this.quoted());
        else if (identifierStart.test(this.char)) labels.push(this.identifier());
        else this.index++;
        this.skipSpace(false);
      }
      this.index++;
      const child: BlockNode = { type: name, labels, children: [] };
      node.children.push(child);
      this.body(child);
    }
  }
}

/** The file's blocks as a tree, in the order written. */
export function blockTree(source: string): BlockNode {
  const root: BlockNode = { type: '', labels: [], children: [] };
  new Scanner(source).body(root);
  return root;
}

/** The children of `node` of one block type, in the order written. */
export const childrenOf = (node: BlockNode | undefined, type: string): BlockNode[] =>
  node ? node.children.filter((child) => child.type === type) : [];
