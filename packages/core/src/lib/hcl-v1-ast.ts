/**
 * The syntax tree of HashiCorp's HCL v1 (github.com/hashicorp/hcl before v2), the language of Vault and Nomad ACL
 * policies, as its parser builds it: a list of items, each with one or more keys and a value. `path "a" { … }`
 * is one item with keys `path`, `"a"`; `x = 1` is an item with an assignment. JSON documents parse into the same
 * tree (see hcl-v1-json.ts), which is why Vault accepts both.
 */

import { goEqualFold } from './go-strings.ts';
import { HclSyntaxError } from './hcl-v1-error.ts';
import { goUnquote, hclUnquote, heredocValue } from './hcl-v1-strings.ts';

export type HclTokenType = 'IDENT' | 'STRING' | 'NUMBER' | 'FLOAT' | 'BOOL' | 'HEREDOC';

export interface Token {
  type: HclTokenType;
  /** The source text, quotes included. */
  text: string;
  /** Strings from a JSON document are unquoted with Go's rules, not HCL's. */
  json?: boolean;
  line: number;
  column: number;
}

export interface ObjectItem {
  keys: Token[];
  /** True for `key = value` (and every JSON member), false for blocks (`key "label" { … }`). */
  assign: boolean;
  value: Node;
}

export interface ObjectList {
  kind: 'items';
  items: ObjectItem[];
}

export interface ObjectType {
  kind: 'object';
  list: ObjectList;
}

export interface ListType {
  kind: 'list';
  elements: Node[];
}

export interface Literal {
  kind: 'literal';
  token: Token;
}

export type Node = ObjectList | ObjectType | ListType | Literal;

/** A key's value: an identifier's text, or a string unquoted. */
export function keyName(token: Token): string {
  const value = tokenValue(token);
  if (typeof value !== 'string')
    throw new HclSyntaxError(`expected a key but found ${token.text}`, token.line, token.column);
  return value;
}

/**
 * The items whose first keys fold-equal `name`, with that key removed, as hcl's `ObjectList.Filter`. Items left
 * with no key are the direct matches (`name = …`, `name { … }`); the others are nested (`name "label" { … }`).
 */
export function filterItems(list: ObjectList, name: string): ObjectItem[] {
  const out: ObjectItem[] = [];
  for (const item of list.items) {
    const first = item.keys[0];
    if (!first || !equalFold(keyName(first), name)) continue;
    out.push({ ...item, keys: item.keys.slice(1) });
  }
  return out;
}

/** Go's strings.EqualFold, as hcl matches keys to fields (`"ß"` is not `"SS"`; the Kelvin sign is `k`). */
export function equalFold(a: string, b: string): boolean {
  return a === b || goEqualFold(a, b);
}

/** A literal's value as hcl's `Token.Value()`: numbers as Go parses them, strings unquoted. */
export function tokenValue(token: Token): string | number | boolean {
  switch (token.type) {
    case 'BOOL':
      return token.text === 'true';
    case 'IDENT':
      return token.text;
    case 'HEREDOC':
      return heredocValue(token.text);
    case 'STRING':
      if (token.text === '') return '';
      return token.json ? goUnquote(token.text) : hclUnquote(token.text);
    case 'NUMBER':
      return parseGoInt(token.text);
    case 'FLOAT':
      return parseGoFloat(token.text);
  }
}

/** Go's strconv.ParseInt(text, 0, 64) for the forms hcl's scanners produce: decimal, 0-prefixed octal, 0x hex. */
export function parseGoInt(text: string): number {
  const match = /^(-?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$/.exec(text);
  if (!match) throw new HclSyntaxError(`invalid integer ${JSON.stringify(text)}`);
  const digits = match[2] as string;
  let value = /^0[xX]/.test(digits)
    ? BigInt(digits)
    : digits.length > 1 && digits.startsWith('0')
      ? BigInt(`0o${digits.slice(1)}`)
      : BigInt(digits);
  if (match[1] === '-') value = -value;
  if (value > 2n ** 63n - 1n || value < -(2n ** 63n)) throw new HclSyntaxError(`integer ${text} out of range`);
  return Number(value);
}

/** Go's strconv.ParseFloat(text, 64) for the forms hcl's scanners produce. */
export function parseGoFloat(text: string): number {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text))
    throw new HclSyntaxError(`invalid number ${JSON.stringify(text)}`);
  const value = Number(text);
  if (!Number.isFinite(value)) throw new HclSyntaxError(`number ${text} out of range`);
  return value;
}
