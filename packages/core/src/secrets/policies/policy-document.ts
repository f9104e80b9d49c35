import { badRequest } from '../../lib/errors.ts';
import {
  equalFold,
  filterItems,
  HclSyntaxError,
  keyName,
  type Node,
  type ObjectList,
  parseHclV1,
} from '../../lib/hcl-v1.ts';
import {
  type DecodedValue,
  decodeInterface,
  decodeMap,
  decodeSlice,
  decodeString,
  fieldSources,
  structList,
} from '../../lib/hcl-v1-decode.ts';
import { goToLower } from '../../lib/go-strings.ts';
import { checkParameterName, type ParameterRules, parameterRules } from './parameter-constraints.ts';

export const capabilityNames = [
  'create',
  'read',
  'update',
  'patch',
  'delete',
  'list',
  'sudo',
  'subscribe',
  'recover',
  'deny',
] as const;
export type Capability = (typeof capabilityNames)[number];

export interface PathRule {
  /** The path as Vault keeps it: a leading `/` removed, a trailing `*` kept. */
  pattern: string;
  capabilities: Capability[];
  /** Only on rules that name parameter constraints (never on a deny rule). */
  parameters?: ParameterRules;
}

/** Vault's deprecated `policy = "..."` shorthand (`deny` replaces, the others add). */
const legacyPolicies: Record<string, Capability[]> = {
  read: ['read', 'list'],
  write: ['create', 'read', 'update', 'delete', 'list'],
  sudo: ['create', 'read', 'update', 'delete', 'list', 'sudo'],
};

const pathKeys = [
  'comment',
  'policy',
  'capabilities',
  'allowed_parameters',
  'denied_parameters',
  'required_parameters',
  'min_wrapping_ttl',
  'max_wrapping_ttl',
  'mfa_methods',
  'control_group',
  'subscribe_event_types',
];

/** Keys Vault honours with machinery this service does not have: a policy naming them is refused, never weakened. */
const unsupportedKeys: Record<string, string> = {
  min_wrapping_ttl: 'response wrapping is not supported',
  max_wrapping_ttl: 'response wrapping is not supported',
  mfa_methods: 'login MFA on paths is not supported',
  control_group: 'control groups are not supported',
  subscribe_event_types: 'event subscriptions are not supported',
};

const fail = (message: string) => badRequest(`failed to parse policy: ${message}`);

/**
 * Parses an ACL policy as Vault 1.21+ does (vault/policy.go over hashicorp/hcl v1.0.1-vault-7): HCL or JSON,
 * the same syntax tree, the same decoding, the same validation. Stricter than Vault where Vault merges repeats
 * (its fork refuses only an HCL attribute written the same way twice): a key given twice in one object (`x` and
 * `"x"`, JSON members), a path given twice, a field or a required parameter given twice are all refused with a
 * 400 naming them. Keys this service cannot honour are refused with a 400 naming them too, so a policy never
 * means less or other than it says.
 */
export function parsePolicyDocument(text: string): PathRule[] {
  try {
    return parse(text);
  } catch (error) {
    if (error instanceof HclSyntaxError) throw fail(error.message);
    throw error;
  }
}

function parse(text: string): PathRule[] {
  const root = parseHclV1(text);
  checkKeys(root, ['name', 'path'], '');
  for (const source of fieldSources(root, 'name')) decodeString(source, 'name');
  const given = new Map<string, { key: string; at: string }>();
  return filterItems(root, 'path').map((item) => {
    const label = item.keys[0];
    const key = label ? keyName(label) : 'path';
    const rule = pathRule(key, item.value);
    // Vault merges the rules of a path given twice (lists appended, the last `policy` winning); refused here.
    const at = label ? `${label.line}:${label.column}` : 'an unnamed path block';
    const earlier = given.get(rule.pattern);
    if (earlier) {
      const spelled = earlier.key === key ? '' : ` (as "${earlier.key}")`;
      throw fail(
        `At ${at}: path "${key}" is given twice (first at ${earlier.at}${spelled}); a path may be given only once in a policy`,
      );
    }
    given.set(rule.pattern, { key, at });
    return rule;
  });
}

/** Vault's CheckHCLKeys: every key of an object must be one it knows (case matters). */
function checkKeys(node: Node, valid: string[], where: string): void {
  const list = node.kind === 'object' ? node.list : node.kind === 'items' ? node : undefined;
  if (!list) throw fail(`${where}cannot check HCL keys of a ${node.kind}`);
  for (const item of list.items) {
    const key = item.keys[0] ? keyName(item.keys[0]) : '';
    if (!valid.includes(key)) throw fail(`${where}invalid key "${key}" on line ${item.keys[0]?.line ?? 0}`);
  }
}

function pathRule(key: string, value: Node): PathRule {
  const where = `path "${key}": `;
  checkTemplate(key);
  checkKeys(value, pathKeys, where);
  const fields = structList(value, `path "${key}"`);
  for (const name of pathKeys) {
    if (fieldSources(fields, name).length < 2) continue;
    const [first, second] = fields.items
      .filter((item) => item.keys[0] && equalFold(keyName(item.keys[0]), name))
      .map((item) => item.keys[0]);
    throw fail(
      `At ${second?.line}:${second?.column}: ${where}"${name}" is given twice (first at ${first?.line}:${first?.column}); a key may be given only once in a path`,
    );
  }
  const decoded = decodePathFields(fields, key);
  const pattern = key.startsWith('/') ? key.slice(1) : key;
  // Checked on deny rules too, whose constraints Vault drops: a policy never reads as something it is not.
  for (const [name, names] of [
    ['allowed_parameters', decoded.allowed],
    ['denied_parameters', decoded.denied],
  ] as const) {
    for (const parameter of names?.keys() ?? []) checkParameterName(pattern, name, parameter, true);
  }
  if (pattern.includes('+*')) throw fail(`path "${pattern}": invalid use of wildcards ('+*' is forbidden)`);
  for (const name of Object.keys(unsupportedKeys)) {
    if (fieldSources(fields, name).length > 0) {
      throw fail(`${where}unsupported key "${name}" (${unsupportedKeys[name]})`);
    }
  }
  let listed = decoded.capabilities;
  if (decoded.policy !== '') {
    if (decoded.policy === 'deny') listed = ['deny'];
    else if (legacyPolicies[decoded.policy]) listed = [...listed, ...(legacyPolicies[decoded.policy] as Capability[])];
    else throw fail(`path "${key}": invalid policy "${decoded.policy}"`);
  }
  const capabilities = new Set<Capability>();
  for (const name of listed) {
    if (name === 'deny') return { pattern, capabilities: ['deny'] };
    if (!(capabilityNames as readonly string[]).includes(name))
      throw fail(`path "${key}": invalid capability "${name}"`);
    capabilities.add(name as Capability);
  }
  const parameters = parameterRules(pattern, decoded.allowed, decoded.denied, decoded.required);
  return parameters
    ? { pattern, capabilities: [...capabilities], parameters }
    : { pattern, capabilities: [...capabilities] };
}

/**
 * Vault fills `{{identity.entity.id}}`-style directives in paths per token (identitytpl), and refuses a path whose
 * `{{` and `}}` do not pair up. This service has no identity templating: a templated path is refused with a 400
 * rather than kept as a literal path Vault would never match.
 */
function checkTemplate(key: string): void {
  const [first, ...pieces] = key.split('{{');
  if ((first as string).includes('}}') || pieces.some((piece) => piece.split('}}').length !== 2)) {
    throw fail(`failed to validate policy templating: path "${key}": unbalanced templating characters`);
  }
  if (pieces.length > 0) throw fail(`path "${key}": templated policy paths ({{…}}) are not supported`);
}

interface PathFields {
  policy: string;
  capabilities: string[];
  allowed: Map<string, DecodedValue[]> | undefined;
  denied: Map<string, DecodedValue[]> | undefined;
  required: string[];
}

/** hcl.DecodeObject into Vault's PathRules: each field from every item naming it, in the struct's field order. */
function decodePathFields(fields: ObjectList, key: string): PathFields {
  const at = (name: string) => `path "${key}": ${name}`;
  const decoded: PathFields = { policy: '', capabilities: [], allowed: undefined, denied: undefined, required: [] };
  for (const source of fieldSources(fields, 'policy')) decoded.policy = decodeString(source, at('policy'));
  for (const source of fieldSources(fields, 'capabilities')) {
    decoded.capabilities = decodeSlice(source, at('capabilities'), decodeString, decoded.capabilities);
  }
  for (const name of ['min_wrapping_ttl', 'max_wrapping_ttl']) {
    for (const source of fieldSources(fields, name)) decodeInterface(source, at(name), 'struct');
  }
  const parameterValues = (
    node: Parameters<typeof decodeString>[0],
    where: string,
    existing: DecodedValue[] | undefined,
  ) => decodeSlice(node, where, (element, elementAt) => decodeInterface(element, elementAt, 'slice'), existing);
  for (const source of fieldSources(fields, 'allowed_parameters')) {
    decoded.allowed = decodeMap(source, at('allowed_parameters'), parameterValues, decoded.allowed, true);
  }
  for (const source of fieldSources(fields, 'denied_parameters')) {
    decoded.denied = decodeMap(source, at('denied_parameters'), parameterValues, decoded.denied, true);
  }
  for (const source of fieldSources(fields, 'required_parameters')) {
    decoded.required = decodeSlice(source, at('required_parameters'), decodeString, decoded.required);
  }
  const required = new Map<string, string>();
  for (const name of decoded.required) {
    checkParameterName(key.startsWith('/') ? key.slice(1) : key, 'required_parameters', name, false);
    const earlier = required.get(goToLower(name));
    if (earlier !== undefined)
      throw fail(`${at('required_parameters')}: "${earlier}" and "${name}" name the same parameter twice`);
    required.set(goToLower(name), name);
  }
  for (const source of fieldSources(fields, 'mfa_methods')) decodeSlice(source, at('mfa_methods'), decodeString);
  for (const source of fieldSources(fields, 'subscribe_event_types'))
    decodeSlice(source, at('subscribe_event_types'), decodeString);
  return decoded;
}
