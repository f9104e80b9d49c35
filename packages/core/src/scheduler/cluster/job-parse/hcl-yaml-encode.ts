/**
 * `yamlencode`, as go-cty-yaml's `YAMLEncodeFunc`: its `Standard` converter emits block mappings (keys in cty's
 * sorted order) and block sequences, empty ones as `{}` and `[]`, strings double-quoted, or as a literal block
 * (`|`, with its chomping and indentation indicators) when they hold a newline, numbers, bools and null plain.
 * The layout is libyaml's emitter (the Go port go-cty-yaml carries): two-space indentation, a sequence inside a
 * mapping not indented, double-quoted strings folded at a space past column 80 of a value, a plain scalar alone in
 * the document followed by `...`. Written here from that emitter's rules for just these events: a general YAML
 * library lays documents out differently, and the function's answer is compared as text.
 */
import { checkString, type HclValue, numberText, sortedKeys } from './hcl-values.ts';

const bestIndent = 2;
const bestWidth = 80;

const isBreak = (cp: number) => cp === 0x0a || cp === 0x0d || cp === 0x85 || cp === 0x2028 || cp === 0x2029;
/** libyaml's `is_printable` (as the Go port reads UTF-8: nothing past U+FFFF is printable). */
const isPrintable = (cp: number) =>
  cp === 0x0a ||
  (cp >= 0x20 && cp <= 0x7e) ||
  (cp >= 0xa0 && cp <= 0xd7ff) ||
  (cp >= 0xe000 && cp <= 0xfffd && cp !== 0xfeff);

const escapes = new Map<number, string>([
  [0x00, '0'],
  [0x07, 'a'],
  [0x08, 'b'],
  [0x09, 't'],
  [0x0a, 'n'],
  [0x0b, 'v'],
  [0x0c, 'f'],
  [0x0d, 'r'],
  [0x1b, 'e'],
  [0x22, '"'],
  [0x5c, '\\'],
  [0x85, 'N'],
  [0xa0, '_'],
  [0x2028, 'L'],
  [0x2029, 'P'],
]);

function escaped(cp: number): string {
  const named = escapes.get(cp);
  if (named !== undefined) return `\\${named}`;
  const [letter, width] = cp <= 0xff ? ['x', 2] : cp <= 0xffff ? ['u', 4] : ['U', 8];
  return `\\${letter}${cp.toString(16).toUpperCase().padStart(width, '0')}`;
}

class Emitter {
  private readonly out: string[] = [];
  private column = 0;
  private whitespace = true;
  private indention = true;
  private openEnded = false;
  private indent = -1;
  private readonly indents: number[] = [];
  private rootContext = false;
  private mappingContext = false;
  private simpleKeyContext = false;

  text(): string {
    return this.out.join('');
  }

  private put(text: string): void {
    this.out.push(text);
    this.column += 1;
  }

  private putBreak(): void {
    this.out.push('\n');
    this.column = 0;
  }

  private writeIndent(): void {
    const indent = Math.max(this.indent, 0);
    if (!this.indention || this.column > indent || (this.column === indent && !this.whitespace)) this.putBreak();
    while (this.column < indent) this.put(' ');
    this.whitespace = true;
    this.indention = true;
  }

  private writeIndicator(indicator: string, needWhitespace: boolean, isWhitespace: boolean, isIndention: boolean) {
    if (needWhitespace && !this.whitespace) this.put(' ');
    for (const character of indicator) this.put(character);
    this.whitespace = isWhitespace;
    this.indention = this.indention && isIndention;
    this.openEnded = false;
  }

  private increaseIndent(flow: boolean, indentless: boolean): void {
    this.indents.push(this.indent);
    if (this.indent < 0) this.indent = flow ? bestIndent : 0;
    else if (!indentless) this.indent += bestIndent;
  }

  private restoreIndent(): void {
    this.indent = this.indents.pop() as number;
  }

  document(value: HclValue): void {
    this.node(value, true, false, false);
    this.writeIndent();
    if (this.openEnded) {
      this.writeIndicator('...', true, false, false);
      this.writeIndent();
    }
  }

  private node(value: HclValue, root: boolean, mapping: boolean, simpleKey: boolean): void {
    this.rootContext = root;
    this.mappingContext = mapping;
    this.simpleKeyContext = simpleKey;
    if (Array.isArray(value)) this.sequence(value);
    else if (value !== null && typeof value === 'object') this.mapping(value);
    else this.scalar(value);
  }

  private sequence(items: HclValue[]): void {
    if (items.length === 0) {
      this.emptyFlow('[', ']');
      return;
    }
    this.increaseIndent(false, this.mappingContext && !this.indention);
    for (const item of items) {
      this.writeIndent();
      this.writeIndicator('-', true, false, true);
      this.node(item, false, false, false);
    }
    this.restoreIndent();
  }

  private mapping(object: { [key: string]: HclValue }): void {
    const keys = sortedKeys(object);
    if (keys.length === 0) {
      this.emptyFlow('{', '}');
      return;
    }
    this.increaseIndent(false, false);
    for (const key of keys) {
      this.writeIndent();
      const simple = ![...key].some((character) => isBreak(character.codePointAt(0) as number));
      if (simple && Buffer.byteLength(key) <= 128) {
        this.node(key, false, true, true);
        this.writeIndicator(':', false, false, false);
      } else {
        this.writeIndicator('?', true, false, true);
        this.node(key, false, true, false);
        this.writeIndent();
        this.writeIndicator(':', true, false, true);
      }
      this.node(object[key] as HclValue, false, true, false);
    }
    this.restoreIndent();
  }

  private emptyFlow(open: string, close: string): void {
    this.writeIndicator(open, true, true, false);
    this.increaseIndent(true, false);
    this.restoreIndent();
    this.writeIndicator(close, false, false, false);
  }

  private scalar(value: string | number | boolean | null): void {
    this.increaseIndent(true, false);
    if (typeof value === 'string') {
      const points = [...value].map((character) => character.codePointAt(0) as number);
      const special = points.some((cp) => !isPrintable(cp));
      const spaceBreak = points.some((cp, index) => cp === 0x20 && isBreak(points[index + 1] ?? 0));
      const blockAllowed = points.length > 0 && points.at(-1) !== 0x20 && !spaceBreak && !special;
      if (value.includes('\n') && blockAllowed && !this.simpleKeyContext) this.literal(points);
      else this.doubleQuoted(points, !this.simpleKeyContext);
    } else if (typeof value === 'number') this.plain(Object.is(value, -0) ? '-0' : numberText(value));
    else this.plain(value === null ? 'null' : String(value));
    this.restoreIndent();
  }

  private plain(text: string): void {
    if (!this.whitespace) this.put(' ');
    for (const character of text) this.put(character);
    this.whitespace = false;
    this.indention = false;
    if (this.rootContext) this.openEnded = true;
  }

  private doubleQuoted(points: number[], allowBreaks: boolean): void {
    this.writeIndicator('"', true, false, false);
    const bom = points[0] === 0xfeff;
    let spaces = false;
    for (let index = 0; index < points.length; index++) {
      const cp = points[index] as number;
      if (!isPrintable(cp) || bom || isBreak(cp) || cp === 0x22 || cp === 0x5c) {
        for (const character of escaped(cp)) this.put(character);
        spaces = false;
      } else if (cp === 0x20) {
        if (allowBreaks && !spaces && this.column > bestWidth && index > 0 && index < points.length - 1) {
          this.writeIndent();
          if (points[index + 1] === 0x20) this.put('\\');
        } else this.put(' ');
        spaces = true;
      } else {
        this.put(String.fromCodePoint(cp));
        spaces = false;
      }
    }
    this.writeIndicator('"', false, false, false);
    this.whitespace = false;
    this.indention = false;
  }

  private literal(points: number[]): void {
    this.writeIndicator('|', true, false, false);
    if (points[0] === 0x20 || isBreak(points[0] as number))
      this.writeIndicator(String(bestIndent), false, false, false);
    const last = points.at(-1) as number;
    const chomp = !isBreak(last) ? '-' : points.length === 1 || isBreak(points.at(-2) as number) ? '+' : '';
    if (chomp) this.writeIndicator(chomp, false, false, false);
    this.putBreak();
    this.indention = true;
    this.whitespace = true;
    let breaks = true;
    for (const cp of points) {
      if (isBreak(cp)) {
        if (cp === 0x0a) this.putBreak();
        else {
          this.out.push(String.fromCodePoint(cp));
          this.column = 0;
        }
        this.indention = true;
        breaks = true;
      } else {
        if (breaks) this.writeIndent();
        this.put(String.fromCodePoint(cp));
        this.indention = false;
        breaks = false;
      }
    }
  }
}

/** `yamlencode(value)`. */
export function yamlEncode(value: HclValue): string {
  const emitter = new Emitter();
  emitter.document(value);
  return checkString(emitter.text());
}
