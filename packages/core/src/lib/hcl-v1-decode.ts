/**
 * hashicorp/hcl v1's decoder (`hcl.DecodeObject`) for the field types ACL policies use, with its merging: a
 * field named twice is decoded twice into the same value, so lists are appended to, maps merged and strings
 * overwritten. Values of `[]interface{}` lists keep Go's types: integers and floats stay numbers (which never
 * equal a request's value in Vault), nested objects inside a map become lists of maps, as hcl builds them.
 */
import {
  filterItems,
  keyName,
  type Node,
  type ObjectItem,
  type ObjectList,
  parseGoFloat,
  parseGoInt,
  tokenValue,
} from './hcl-v1-ast.ts';
import { HclSyntaxError } from './hcl-v1-error.ts';

/** What a `[]interface{}` element or `interface{}` field decodes to. */
export type DecodedValue = string | number | boolean | DecodedValue[] | { [key: string]: DecodedValue };

type DecodeNode = Node | ObjectItem;

const describe = (node: DecodeNode) => {
  if (!('kind' in node)) return `a nested block (${node.keys.map((key) => key.text).join(' ')})`;
  if (node.kind === 'literal')
    return `${node.token.type === 'BOOL' ? 'a boolean' : node.token.type === 'FLOAT' ? 'a number' : node.token.type === 'NUMBER' ? 'a number' : 'a string'} (${node.token.text.slice(0, 40)})`;
  return node.kind === 'list' ? 'a list' : 'an object';
};
const decodeError = (where: string, message: string) => new HclSyntaxError(`${where}: ${message}`);

/** The nodes a struct field is decoded from: a nested list for `field "label" { … }` items, then each direct value. */
export function fieldSources(list: ObjectList, name: string): DecodeNode[] {
  const matches = filterItems(list, name);
  const nested = matches.filter((item) => item.keys.length > 0);
  const sources: DecodeNode[] = nested.length > 0 ? [{ kind: 'items', items: nested }] : [];
  for (const item of matches) {
    if (item.keys.length > 0) continue;
    sources.push(item.value.kind === 'object' ? item.value.list : item.value);
  }
  return sources;
}

/** The object list a struct is decoded from (an object value, or the root list); anything else is an error. */
export function structList(node: DecodeNode, where: string): ObjectList {
  if ('kind' in node && node.kind === 'object') return node.list;
  if ('kind' in node && node.kind === 'items') return node;
  throw decodeError(where, `expected an object but found ${describe(node)}`);
}

/** hcl's decodeString: a string, heredoc or integer (kept as written). */
export function decodeString(node: DecodeNode, where: string): string {
  if ('kind' in node && node.kind === 'literal') {
    const { token } = node;
    if (token.type === 'NUMBER') return token.text;
    if (token.type === 'STRING' || token.type === 'HEREDOC') return tokenValue(token) as string;
  }
  throw decodeError(where, `expected a string but found ${describe(node)}`);
}

/** hcl's decodeSlice: the elements of a list (or one object, or an item list), appended to `existing`. */
export function decodeSlice<T>(
  node: DecodeNode,
  where: string,
  element: (node: DecodeNode, where: string) => T,
  existing: T[] = [],
): T[] {
  let items: DecodeNode[];
  if ('kind' in node && node.kind === 'items') items = node.items;
  else if ('kind' in node && node.kind === 'object') items = [node];
  else if ('kind' in node && node.kind === 'list') items = node.elements;
  else throw decodeError(where, `expected a list but found ${describe(node)}`);
  return [...existing, ...items.map((item, index) => element(item, `${where}[${index}]`))];
}

/**
 * hcl's decodeMap into `map[string]T`: each member decoded into the map's existing value for its key, so a key
 * given twice (`x` and `"x"`) merges. A member with more than one key is decoded from all members sharing its
 * first key.
 */
export function decodeMap<T>(
  node: DecodeNode,
  where: string,
  value: (node: DecodeNode, where: string, existing: T | undefined) => T,
  existing: Map<string, T> = new Map(),
  /** Refuse a name given by two members (`x "a" { }` twice, say) instead of merging them. */
  strict = false,
): Map<string, T> {
  let list: ObjectList;
  if (!('kind' in node)) list = { kind: 'items', items: [node] };
  else if (node.kind === 'object') list = node.list;
  else if (node.kind === 'items') list = node;
  else throw decodeError(where, `expected an object of names to values but found ${describe(node)}`);
  const result = new Map(existing);
  const done = new Set<string>();
  for (const item of list.items) {
    const first = item.keys[0];
    if (!first) throw decodeError(where, 'expected named members');
    const key = keyName(first);
    if (strict && (done.has(key) || result.has(key))) {
      throw new HclSyntaxError(
        `${where}: "${key}" is given twice; a name may be given only once`,
        first.line,
        first.column,
      );
    }
    if (done.has(key)) continue;
    let source: DecodeNode = item.value;
    if (item.keys.length > 1) {
      source = { kind: 'items', items: filterItems(list, key) };
      done.add(key);
    }
    result.set(key, value(source, `${where}.${key}`, result.get(key)));
  }
  return result;
}

type StackTop = 'root' | 'slice' | 'map' | 'struct';

/** hcl's decodeInterface: literals keep their Go type; objects become maps, or lists of maps below a map. */
export function decodeInterface(node: DecodeNode, where: string, top: StackTop): DecodedValue {
  const test = 'kind' in node && node.kind === 'object' ? node.list : node;
  if ('kind' in test && test.kind === 'items') {
    if (top === 'root' || top === 'slice')
      return objectOf(decodeMap(node, where, (value, at, old) => redecode(value, at, old, 'map')));
    return decodeSlice(node, where, (element, at) =>
      objectOf(decodeMap(element, at, (value, at2, old) => redecode(value, at2, old, 'map'))),
    );
  }
  if ('kind' in test && test.kind === 'list')
    return decodeSlice(test, where, (element, at) => decodeInterface(element, at, 'slice'));
  if ('kind' in test && test.kind === 'literal') {
    const { token } = test;
    if (token.type === 'BOOL') return token.text === 'true';
    if (token.type === 'FLOAT') return parseGoFloat(token.text);
    if (token.type === 'NUMBER') return parseGoInt(token.text);
    if (token.type === 'STRING' || token.type === 'HEREDOC') return tokenValue(token) as string;
  }
  throw decodeError(where, `expected a value but found ${describe(node)}`);
}

/** Decoding into an `interface{}` that already holds a value goes by that value's type, as hcl's decoder does. */
function redecode(node: DecodeNode, where: string, old: DecodedValue | undefined, top: StackTop): DecodedValue {
  if (old === undefined) return decodeInterface(node, where, top);
  if (typeof old === 'string') return decodeString(node, where);
  if (typeof old === 'boolean') {
    if ('kind' in node && node.kind === 'literal' && node.token.type === 'BOOL') return node.token.text === 'true';
    throw decodeError(where, 'unknown type for bool');
  }
  if (typeof old === 'number') {
    if ('kind' in node && node.kind === 'literal') {
      if (Number.isInteger(old) && (node.token.type === 'NUMBER' || node.token.type === 'STRING')) {
        return parseGoInt(node.token.type === 'NUMBER' ? node.token.text : (tokenValue(node.token) as string));
      }
      if (node.token.type === 'NUMBER' || node.token.type === 'FLOAT') return parseGoFloat(node.token.text);
    }
    throw decodeError(where, 'unknown type for number');
  }
  if (Array.isArray(old)) return decodeSlice(node, where, (element, at) => decodeInterface(element, at, 'slice'), old);
  const merged = decodeMap(
    node,
    where,
    (value, at, previous) => redecode(value, at, previous, 'map'),
    new Map(Object.entries(old)),
  );
  return objectOf(merged);
}

function objectOf(map: Map<string, DecodedValue>): { [key: string]: DecodedValue } {
  const out: { [key: string]: DecodedValue } = Object.create(null);
  for (const [key, value] of map) out[key] = value;
  return out;
}
