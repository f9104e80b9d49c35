/**
 * `yamldecode`, as go-cty-yaml's `YAMLDecodeFunc` (the `Standard` converter Nomad's `jobspec2/functions.go` uses):
 * the YAML is parsed by the `yaml` package (eemeli/yaml) with its failsafe schema, so that every scalar comes back as
 * its source text, and each scalar is then resolved as go-cty-yaml's `resolve.go` resolves it (YAML 1.1's
 * `yes`/`no`/`on`/`off`, `~`, hexadecimal and `0o` octal integers, `_` in numbers, timestamps rewritten as RFC 3339,
 * `!!binary` kept as its base64 text, `<<` merge keys); mappings become objects, sequences tuples. Exactly one
 * document; a tag outside YAML's core set, NaN, a non-scalar or null mapping key, an alias to an anchor not yet
 * complete or never defined are errors, as there; so is a document that is only null (go-cty-yaml answers an unknown
 * value for it).
 *
 * Differs: an infinity (`.inf`) is refused, as this service's numbers are doubles that a job cannot carry; aliases
 * are expanded as shared values, and the values they add are capped (`maxAliasExpansion`), so that a small document
 * cannot expand to billions of values (go-cty shares them too, but any later use walks them all).
 */
import { type Node, parseAllDocuments, isAlias, isMap, isPair, isScalar, isSeq, type Scalar } from 'yaml';
import { maxExpressionDepth } from './hcl-expression.ts';
import { type Budget, HclEvalError, HclLimitError, type HclValue, newObject, numberText } from './hcl-values.ts';

/** The most values a document's aliases may add by repeating what they name. */
export const maxAliasExpansion = 10_000;

const tagPrefix = 'tag:yaml.org,2002:';
const tags = {
  str: `${tagPrefix}str`,
  bool: `${tagPrefix}bool`,
  int: `${tagPrefix}int`,
  float: `${tagPrefix}float`,
  null: `${tagPrefix}null`,
  timestamp: `${tagPrefix}timestamp`,
  binary: `${tagPrefix}binary`,
  map: `${tagPrefix}map`,
  seq: `${tagPrefix}seq`,
};
const resolvable = new Set(['', tags.str, tags.bool, tags.int, tags.float, tags.null, tags.timestamp, tags.binary]);

const fixed = new Map<string, { value: HclValue; tag: string }>();
for (const [value, tag, words] of [
  [true, tags.bool, 'y Y yes Yes YES true True TRUE on On ON'],
  [false, tags.bool, 'n N no No NO false False FALSE off Off OFF'],
  [null, tags.null, '~ null Null NULL'],
  [Number.POSITIVE_INFINITY, tags.float, '.inf .Inf .INF +.inf +.Inf +.INF'],
  [Number.NEGATIVE_INFINITY, tags.float, '-.inf -.Inf -.INF'],
] as const)
  for (const word of words.split(' ')) fixed.set(word, { value, tag });
fixed.set('', { value: null, tag: tags.null });

const integerLiteral = /^[-+]?(|0o[0-7_]+|[0-9_]+|0x[0-9a-fA-F_]+)$/;
const floatLiteral = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;

/** The merge key `<<`, as a resolved value distinct from any string. */
const merge = Symbol('merge');
type Resolved = HclValue | typeof merge;

function hint(text: string): string {
  if (text === '') return 'N';
  const first = text[0] as string;
  if (first === '+' || first === '-') return 'S';
  if (first >= '0' && first <= '9') return 'D';
  if ('yYnNtTfFoO~'.includes(first)) return 'M';
  return first === '.' ? '.' : '';
}

const pad = (value: number) => String(value).padStart(2, '0');

/** go-cty-yaml's `parseTimestamp`: a date, or a date and time, written back as Go's RFC 3339. */
function timestamp(text: string): string | undefined {
  const match =
    /^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:([Tt ])([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})?)?$/.exec(
      text,
    );
  if (!match) return undefined;
  const [, year, month, day, separator, hour, minute, second, , zone] = match;
  if (separator === ' ' ? zone !== undefined : separator !== undefined && zone === undefined) return undefined;
  const [y, mo, d] = [Number(year), Number(month), Number(day)];
  if (mo < 1 || mo > 12 || d < 1 || d > new Date(Date.UTC(y, mo, 0)).getUTCDate()) return undefined;
  const [h, mi, s] = [Number(hour ?? 0), Number(minute ?? 0), Number(second ?? 0)];
  if (h > 23 || mi > 59 || s > 59) return undefined;
  const offset = zone === undefined || /^(Z|[+-]00:00)$/.test(zone) ? 'Z' : zone;
  if (offset !== 'Z' && (Number(offset.slice(1, 3)) > 23 || Number(offset.slice(4)) > 59)) return undefined;
  return `${year}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}${offset}`;
}

function parseNumber(text: string): number | undefined {
  if (floatLiteral.test(text)) return Number(text);
  const integer = /^([-+]?)0([xob])([0-9a-fA-F]+)$/.exec(text);
  if (!integer) return undefined;
  const [, sign, base, digits] = integer as unknown as [string, string, string, string];
  const radix = base === 'x' ? 16 : base === 'o' ? 8 : 2;
  if (![...digits].every((digit) => !Number.isNaN(Number.parseInt(digit, radix)))) return undefined;
  const value = Number.parseInt(digits, radix);
  return sign === '-' ? -value : value;
}

const isBase64 = (text: string) => {
  const clean = text.replace(/[\r\n]/g, '');
  return clean.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(clean);
};

/** go-cty-yaml's `resolveScalar`: a scalar's value from its tag, its source text and whether it was quoted. */
function resolveScalar(tag: string, text: string, quoted: boolean): Resolved {
  if (!resolvable.has(tag)) throw new HclEvalError('Invalid YAML', `unsupported tag "${tag}"`);
  let resolvedTag = tag;
  const kind = hint(text);
  if (kind !== '' && tag !== tags.str && tag !== tags.binary) {
    if (quoted) return text;
    const known = fixed.get(text);
    if (known) return known.value;
    if (tag === '' && ['.nan', '.NaN', '.NAN'].includes(text))
      throw new HclEvalError('Invalid YAML', 'floating point NaN is not supported');
    if (kind === '.') {
      if (floatLiteral.test(text)) return Number(text);
    } else if (kind === 'D' || kind === 'S') {
      if (tag === '' || tag === tags.timestamp) {
        const time = timestamp(text);
        if (time !== undefined) return time;
      }
      if (integerLiteral.test(text)) resolvedTag = tags.int;
      else if (floatLiteral.test(text)) resolvedTag = tags.float;
    }
  }
  if (resolvedTag === '' && text === '<<') return merge;
  switch (resolvedTag) {
    case tags.binary:
      if (!isBase64(text)) throw new HclEvalError('Invalid YAML', `cannot parse "${text}" as ${tag}: not valid base64`);
      return text;
    case tags.bool: {
      const known = fixed.get(text);
      if (known?.tag !== tags.bool) throw new HclEvalError('Invalid YAML', `cannot parse "${text}" as ${tag}`);
      return known.value;
    }
    case tags.int:
    case tags.float: {
      const value = parseNumber(text.replaceAll('_', ''));
      if (value === undefined) throw new HclEvalError('Invalid YAML', `cannot parse "${text}" as ${resolvedTag}`);
      return value;
    }
    case tags.timestamp: {
      const time = timestamp(text);
      if (time === undefined) throw new HclEvalError('Invalid YAML', `cannot parse "${text}" as ${tag}`);
      return time;
    }
    case tags.null:
      return null;
    default:
      return text;
  }
}

function checkFinite(value: Resolved): Resolved {
  if (typeof value === 'number' && !Number.isFinite(value))
    throw new HclEvalError('Invalid YAML', `${numberTextOrInfinity(value)} cannot be a job file's number`);
  return value;
}

const numberTextOrInfinity = (value: number) => (Number.isFinite(value) ? numberText(value) : String(value));

class Decoder {
  private readonly anchors = new Map<string, { value: HclValue; size: number }>();
  private readonly pending = new Set<string>();
  private expanded = 0;

  constructor(private readonly budget: Budget) {}

  value(node: unknown, depth: number): { value: HclValue; size: number } {
    if (depth > maxExpressionDepth) throw new HclLimitError(`the YAML nests more than ${maxExpressionDepth} levels`);
    this.budget.spend(1);
    if (isAlias(node)) {
      if (this.pending.has(node.source))
        throw new HclEvalError(
          'Invalid YAML',
          `cannot refer to anchor "${node.source}" from inside its own definition`,
        );
      const named = this.anchors.get(node.source);
      if (!named) throw new HclEvalError('Invalid YAML', `reference to undefined anchor "${node.source}"`);
      this.expanded += named.size;
      if (this.expanded > maxAliasExpansion)
        throw new HclLimitError(`the YAML's aliases expand to more than ${maxAliasExpansion} values`);
      this.budget.spend(named.size);
      return named;
    }
    const anchor = (node as Node | null)?.anchor;
    if (anchor) this.pending.add(anchor);
    const out = this.unanchored(node, depth);
    if (anchor) {
      this.pending.delete(anchor);
      this.anchors.set(anchor, out);
    }
    return out;
  }

  private unanchored(node: unknown, depth: number): { value: HclValue; size: number } {
    if (node === null || node === undefined) return { value: null, size: 1 };
    if (isScalar(node)) {
      const quoted = node.type !== 'PLAIN';
      const tag = node.tag ?? '';
      if (tag === '' && quoted) return { value: scalarText(node), size: 1 };
      const value = checkFinite(resolveScalar(tag, scalarText(node), quoted));
      return { value: value === merge ? '<<' : value, size: 1 };
    }
    if (isSeq(node)) {
      if (node.tag && node.tag !== tags.seq)
        throw new HclEvalError('Invalid YAML', `can't interpret sequence as ${node.tag}`);
      const items: HclValue[] = [];
      let size = 1;
      for (const item of node.items) {
        const out = this.value(item, depth + 1);
        items.push(out.value);
        size += out.size;
      }
      return { value: items, size };
    }
    if (isMap(node)) {
      if (node.tag && node.tag !== tags.map)
        throw new HclEvalError('Invalid YAML', `can't interpret mapping as ${node.tag}`);
      const out = newObject();
      let size = 1;
      for (const pair of node.items) {
        if (!isPair(pair) || !isScalar(pair.key))
          throw new HclEvalError('Invalid YAML', 'only strings are allowed as mapping keys');
        const key = pair.key as Scalar;
        if (key.anchor) this.anchors.set(key.anchor, { value: scalarText(key), size: 1 });
        const name = resolveScalar(key.tag ?? '', scalarText(key), key.type !== 'PLAIN');
        const value = this.value(pair.value, depth + 1);
        size += value.size;
        if (name === merge) {
          if (value.value === null || typeof value.value !== 'object' || Array.isArray(value.value))
            throw new HclEvalError('Invalid YAML', 'cannot merge a value that is not a mapping into a mapping');
          for (const [inner, item] of Object.entries(value.value)) out[inner] = item;
          continue;
        }
        if (name === null) throw new HclEvalError('Invalid YAML', 'mapping key cannot be null');
        if (typeof name === 'object')
          throw new HclEvalError('Invalid YAML', 'only strings are allowed as mapping keys');
        out[typeof name === 'number' ? numberTextOrInfinity(name) : String(name)] = value.value;
      }
      return { value: out, size };
    }
    throw new HclEvalError('Invalid YAML', 'unexpected node');
  }
}

/** A scalar's text before any tag resolved it (the library decodes a `!!binary` itself; cty keeps the base64). */
function scalarText(node: Scalar): string {
  if (typeof node.source === 'string') return node.source;
  return node.value === null || node.value === undefined ? '' : String(node.value);
}

/** `yamldecode(src)`. */
export function yamlDecode(source: string, budget: Budget): HclValue {
  budget.spend(Math.ceil(source.length / 64));
  const documents = parseAllDocuments(source, { schema: 'failsafe', uniqueKeys: false, prettyErrors: false });
  if (!Array.isArray(documents) || documents.length === 0)
    throw new HclEvalError('Invalid YAML', 'missing start of document');
  for (const document of documents) {
    const [problem] = document.errors;
    if (problem) throw new HclEvalError('Invalid YAML', problem.message);
  }
  if (documents.length > 1) throw new HclEvalError('Invalid YAML', 'only a single document is allowed');
  const [document] = documents;
  const value = new Decoder(budget).value(document?.contents ?? null, 0).value;
  // go-cty-yaml gives a document that is only null the type "any", and so answers an unknown value: no value here.
  if (value === null) throw new HclEvalError('Invalid YAML', 'the document is null: its value is unknown');
  return value;
}
