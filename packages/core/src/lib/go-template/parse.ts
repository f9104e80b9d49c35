/** Parsing Go `text/template` source into a tree of text, actions and blocks (`if`/`with`/`range`). */

export class TemplateError extends Error {}

export type TemplateValue = unknown;
export type TemplateFunction = (...args: TemplateValue[]) => TemplateValue;

export type TemplateNode =
  | { kind: 'text'; text: string }
  | { kind: 'action'; pipeline: TemplatePipeline }
  | { kind: 'if' | 'with'; pipeline: TemplatePipeline; whenTrue: TemplateNode[]; otherwise: TemplateNode[] }
  | { kind: 'range'; pipeline: TemplatePipeline; body: TemplateNode[]; otherwise: TemplateNode[] };

export type TemplatePipeline = Command[];
export type Command = Operand[];
export type Operand =
  | { kind: 'field'; path: string[] }
  | { kind: 'literal'; value: TemplateValue }
  | { kind: 'ident'; name: string }
  | { kind: 'pipeline'; pipeline: TemplatePipeline; path: string[] };

interface Segment {
  text?: string;
  action?: string;
}

/** Splits into text and action bodies, applying trim markers. */
function segments(source: string): Segment[] {
  const out: Segment[] = [];
  let pos = 0;
  while (pos < source.length) {
    const open = source.indexOf('{{', pos);
    if (open === -1) {
      out.push({ text: source.slice(pos) });
      break;
    }
    let text = source.slice(pos, open);
    let bodyStart = open + 2;
    if (
      source.startsWith('- ', bodyStart) ||
      source.startsWith('-\t', bodyStart) ||
      source.startsWith('-\n', bodyStart)
    ) {
      text = text.replace(/\s+$/, '');
      bodyStart += 1;
    }
    out.push({ text });
    let close = -1;
    let scan = bodyStart;
    // Find the closing braces outside string literals and comments.
    while (scan < source.length) {
      const char = source[scan];
      if (char === '"' || char === '`') {
        const end = char === '"' ? closingQuote(source, scan) : source.indexOf('`', scan + 1);
        if (end === -1) throw new TemplateError('unterminated quoted string in action');
        scan = end + 1;
        continue;
      }
      if (source.startsWith('/*', scan)) {
        const end = source.indexOf('*/', scan + 2);
        if (end === -1) throw new TemplateError('unclosed comment');
        scan = end + 2;
        continue;
      }
      if (source.startsWith('}}', scan)) {
        close = scan;
        break;
      }
      scan++;
    }
    if (close === -1) throw new TemplateError('unclosed action: missing "}}"');
    let body = source.slice(bodyStart, close);
    pos = close + 2;
    if (/\s-$/.test(body)) {
      body = body.slice(0, -1);
      const rest = /^\s*/.exec(source.slice(pos));
      pos += rest ? rest[0].length : 0;
    }
    out.push({ action: body });
  }
  return out;
}

function closingQuote(source: string, start: number): number {
  for (let index = start + 1; index < source.length; index++) {
    if (source[index] === '\\') index++;
    else if (source[index] === '"') return index;
    else if (source[index] === '\n') return -1;
  }
  return -1;
}

type Token = { kind: 'field'; path: string[] } | { kind: 'string' | 'number' | 'ident' | 'punct'; value: string };

function tokenize(action: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  while (pos < action.length) {
    const rest = action.slice(pos);
    const space = /^\s+/.exec(rest);
    if (space) {
      pos += space[0].length;
      continue;
    }
    const char = rest[0] as string;
    if (char === '"') {
      const end = closingQuote(action, pos);
      if (end === -1) throw new TemplateError('unterminated quoted string');
      tokens.push({ kind: 'string', value: unquote(action.slice(pos, end + 1)) });
      pos = end + 1;
    } else if (char === '`') {
      const end = action.indexOf('`', pos + 1);
      if (end === -1) throw new TemplateError('unterminated raw string');
      tokens.push({ kind: 'string', value: action.slice(pos + 1, end) });
      pos = end + 1;
    } else if (char === '(' || char === ')' || char === '|') {
      tokens.push({ kind: 'punct', value: char });
      pos++;
    } else if (char === '.') {
      const field = /^(\.[A-Za-z_][A-Za-z0-9_]*)+|^\./.exec(rest) as RegExpExecArray;
      const path = field[0] === '.' ? [] : field[0].slice(1).split('.');
      tokens.push({ kind: 'field', path });
      pos += field[0].length;
    } else {
      const number = /^[-+]?(0x[0-9a-fA-F]+|\d+(\.\d+)?([eE][-+]?\d+)?)/.exec(rest);
      const ident = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest);
      const chained = ident && /^\.[A-Za-z_]/.test(rest.slice(ident[0].length));
      if (number) {
        tokens.push({ kind: 'number', value: number[0] });
        pos += number[0].length;
      } else if (ident && !chained) {
        tokens.push({ kind: 'ident', value: ident[0] });
        pos += ident[0].length;
      } else {
        throw new TemplateError(`unexpected "${rest.slice(0, 10)}" in action`);
      }
    }
  }
  return tokens;
}

/** Go's interpreted string literal. */
function unquote(literal: string): string {
  try {
    return JSON.parse(
      literal
        .replace(/\\x([0-9a-fA-F]{2})/g, '\\u00$1')
        .replace(
          /\\([abfv'])/g,
          (_m, c: string) => ({ a: '\\u0007', b: '\\b', f: '\\f', v: '\\u000b', "'": "'" })[c] as string,
        ),
    ) as string;
  } catch {
    throw new TemplateError(`invalid string literal ${literal}`);
  }
}

class PipelineParser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  parse(): TemplatePipeline {
    const pipeline = this.pipeline();
    if (this.pos < this.tokens.length)
      throw new TemplateError(`unexpected "${describe(this.tokens[this.pos])}" in pipeline`);
    return pipeline;
  }

  private pipeline(): TemplatePipeline {
    const commands: Command[] = [this.command()];
    while (this.peekPunct('|')) {
      this.pos++;
      commands.push(this.command());
    }
    return commands;
  }

  private command(): Command {
    const operands: Operand[] = [];
    while (this.pos < this.tokens.length && !this.peekPunct('|') && !this.peekPunct(')')) operands.push(this.operand());
    if (operands.length === 0) throw new TemplateError('missing value for command');
    return operands;
  }

  private operand(): Operand {
    const token = this.tokens[this.pos++] as Token;
    switch (token.kind) {
      case 'field':
        return { kind: 'field', path: token.path };
      case 'string':
        return { kind: 'literal', value: token.value };
      case 'number':
        return { kind: 'literal', value: Number(token.value) };
      case 'ident':
        if (token.value === 'true' || token.value === 'false')
          return { kind: 'literal', value: token.value === 'true' };
        if (token.value === 'nil') return { kind: 'literal', value: null };
        return { kind: 'ident', name: token.value };
      case 'punct': {
        if (token.value !== '(') throw new TemplateError(`unexpected "${token.value}"`);
        const pipeline = this.pipeline();
        if (!this.peekPunct(')')) throw new TemplateError('unclosed left paren');
        this.pos++;
        const next = this.tokens[this.pos];
        let path: string[] = [];
        if (next?.kind === 'field' && next.path.length > 0) {
          path = next.path;
          this.pos++;
        }
        return { kind: 'pipeline', pipeline, path };
      }
    }
  }

  private peekPunct(value: string): boolean {
    const token = this.tokens[this.pos];
    return token?.kind === 'punct' && token.value === value;
  }
}

const describe = (token: Token | undefined) =>
  !token ? 'end' : token.kind === 'field' ? `.${token.path.join('.')}` : token.value;

function parsePipeline(text: string): TemplatePipeline {
  return new PipelineParser(tokenize(text)).parse();
}

/** Parses the whole template into a tree; throws TemplateError on bad syntax. */
export function parseTemplate(source: string): TemplateNode[] {
  const parts = segments(source);
  let index = 0;
  /** `if`/`with`/`range` up to its `{{end}}`; an `else if` chain shares that one `end`. */
  const conditional = (word: 'if' | 'with' | 'range', rest: string): TemplateNode => {
    if (rest === '') throw new TemplateError(`missing condition in {{${word}}}`);
    const pipeline = parsePipeline(rest);
    const body = block(['else', 'end']);
    let otherwise: TemplateNode[] = [];
    if (body.ended === 'else') {
      const next = parts[index]?.action?.trim() ?? '';
      const chained = elseChain ? /^(if|with)\b\s*/.exec(next) : null;
      if (chained && word !== 'range') {
        index++;
        elseChain = false;
        otherwise = [conditional(chained[1] as 'if' | 'with', next.slice(chained[0].length))];
      } else {
        otherwise = block(['end']).nodes;
      }
    }
    return word === 'range'
      ? { kind: 'range', pipeline, body: body.nodes, otherwise }
      : { kind: word, pipeline, whenTrue: body.nodes, otherwise };
  };
  let elseChain = false;
  const block = (terminators: string[]): { nodes: TemplateNode[]; ended: string } => {
    const nodes: TemplateNode[] = [];
    while (index < parts.length) {
      const part = parts[index++] as Segment;
      if (part.text !== undefined) {
        if (part.text !== '') nodes.push({ kind: 'text', text: part.text });
        continue;
      }
      const action = (part.action as string).trim();
      if (action.startsWith('/*')) {
        if (!action.endsWith('*/')) throw new TemplateError('comment ends before closing delimiter');
        continue;
      }
      const keyword = /^(if|else|end|with|range|define|template|block|break|continue)\b\s*/.exec(action);
      if (!keyword) {
        if (action === '') throw new TemplateError('missing value for command');
        if (/^\$/.test(action)) throw new TemplateError('template variables are not supported');
        nodes.push({ kind: 'action', pipeline: parsePipeline(action) });
        continue;
      }
      const word = keyword[1] as string;
      const rest = action.slice(keyword[0].length);
      if (word === 'end' || word === 'else') {
        if (!terminators.includes(word)) throw new TemplateError(`unexpected {{${word}}}`);
        if (word === 'else' && rest !== '') {
          // `else if …` / `else with …`: an inner conditional that closes with the outer `end`.
          if (!/^(if|with)\b/.test(rest)) throw new TemplateError(`unexpected "${rest}" after {{else}}`);
          index--;
          parts[index] = { action: rest };
          elseChain = true;
        }
        return { nodes, ended: word };
      }
      if (word === 'if' || word === 'with' || word === 'range') {
        nodes.push(conditional(word, rest));
        continue;
      }
      throw new TemplateError(`{{${word}}} is not supported`);
    }
    if (terminators.length > 0) throw new TemplateError('unexpected EOF: missing {{end}}');
    return { nodes, ended: '' };
  };
  return block([]).nodes;
}
