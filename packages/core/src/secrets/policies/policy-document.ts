import { type HclBody, HclSyntaxError, type HclValue, parseHcl } from '../../lib/hcl.ts';
import { badRequest } from '../../http/errors.ts';
import { type ParameterRules, parseParameterRules } from './parameter-constraints.ts';

export const capabilityNames = ['create', 'read', 'update', 'patch', 'delete', 'list', 'sudo', 'deny'] as const;
export type Capability = (typeof capabilityNames)[number];

export interface PathRule {
  pattern: string;
  capabilities: Capability[];
  /** Only on rules that name parameter constraints (never on a deny rule). */
  parameters?: ParameterRules;
}

const ruleKeys = ['capabilities', 'policy', 'allowed_parameters', 'denied_parameters', 'required_parameters'];

/** Vault's deprecated `policy = "..."` shorthand. */
const legacyPolicies: Record<string, Capability[]> = {
  deny: ['deny'],
  read: ['read', 'list'],
  write: ['create', 'read', 'update', 'delete', 'list'],
  sudo: ['create', 'read', 'update', 'delete', 'list', 'sudo'],
};

/**
 * Parses an ACL policy in HCL or JSON (`{"path": {"secret/*": {"capabilities": [...]}}}`) into its path
 * rules, with their parameter constraints. Anything it cannot honour (response wrapping TTLs, MFA, control
 * groups) is refused with a 400 naming it, so a policy never means less than it says.
 */
export function parsePolicyDocument(text: string): PathRule[] {
  const rules = text.trim().startsWith('{') ? rulesFromJson(text) : rulesFromHcl(text);
  return rules;
}

function rulesFromHcl(text: string): PathRule[] {
  let body: HclBody;
  try {
    body = parseHcl(text);
  } catch (error) {
    if (error instanceof HclSyntaxError) throw badRequest(`failed to parse policy: ${error.message}`);
    throw error;
  }
  const unknownTop = [...Object.keys(body.attributes), ...body.blocks.map((block) => block.type)].filter(
    (key) => key !== 'path' && key !== 'name',
  );
  if (unknownTop.length > 0) throw badRequest(`failed to parse policy: invalid key "${unknownTop[0]}"`);
  return body.blocks.map((block) => {
    if (block.labels.length !== 1) throw badRequest('failed to parse policy: a path block needs exactly one label');
    if (block.body.blocks.length > 0) {
      throw badRequest(`failed to parse policy: unexpected block "${block.body.blocks[0]?.type}" in path "${block.labels[0]}"`);
    }
    return rule(block.labels[0] as string, block.body.attributes);
  });
}

function rulesFromJson(text: string): PathRule[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw badRequest(`failed to parse policy: ${(error as Error).message}`);
  }
  if (!isObject(parsed)) throw badRequest('failed to parse policy: expected a JSON object');
  const unknownTop = Object.keys(parsed).filter((key) => key !== 'path' && key !== 'name');
  if (unknownTop.length > 0) throw badRequest(`failed to parse policy: invalid key "${unknownTop[0]}"`);
  const paths = parsed.path ?? {};
  // HCL-as-JSON allows the block map itself or a list of one-key maps.
  const entries = (Array.isArray(paths) ? paths : [paths]).flatMap((group) => {
    if (!isObject(group)) throw badRequest('failed to parse policy: "path" must be an object of path rules');
    return Object.entries(group);
  });
  return entries.map(([pattern, body]) => {
    if (!isObject(body)) throw badRequest(`failed to parse policy: path "${pattern}" must be an object`);
    return rule(pattern, body as Record<string, HclValue>);
  });
}

function rule(pattern: string, attributes: Record<string, HclValue>): PathRule {
  const unknown = Object.keys(attributes).find((key) => !ruleKeys.includes(key));
  if (unknown === 'min_wrapping_ttl' || unknown === 'max_wrapping_ttl') {
    throw badRequest(`failed to parse policy: unsupported key "${unknown}" in path "${pattern}" (response wrapping is not supported)`);
  }
  if (unknown !== undefined) {
    throw badRequest(`failed to parse policy: unsupported key "${unknown}" in path "${pattern}" (only ${ruleKeys.map((key) => `"${key}"`).join(', ')})`);
  }
  checkPattern(pattern);
  const capabilities = new Set<Capability>();
  const listed = attributes.capabilities ?? [];
  if (!Array.isArray(listed)) throw badRequest(`failed to parse policy: capabilities of "${pattern}" must be a list`);
  for (const name of listed) {
    if (typeof name !== 'string' || !(capabilityNames as readonly string[]).includes(name)) {
      throw badRequest(`failed to parse policy: invalid capability "${String(name)}" in path "${pattern}"`);
    }
    capabilities.add(name as Capability);
  }
  if (attributes.policy !== undefined) {
    const legacy = typeof attributes.policy === 'string' ? legacyPolicies[attributes.policy] : undefined;
    if (!legacy) throw badRequest(`failed to parse policy: invalid policy "${String(attributes.policy)}" in path "${pattern}"`);
    for (const name of legacy) capabilities.add(name);
  }
  const parameters = parseParameterRules(pattern, attributes);
  // As Vault, a deny rule keeps nothing but the deny.
  if (capabilities.has('deny')) return { pattern, capabilities: ['deny'] };
  return parameters ? { pattern, capabilities: [...capabilities], parameters } : { pattern, capabilities: [...capabilities] };
}

function checkPattern(pattern: string): void {
  const star = pattern.indexOf('*');
  if (star !== -1 && star !== pattern.length - 1) {
    throw badRequest(`failed to parse policy: path "${pattern}": "*" is only allowed at the end`);
  }
  for (const segment of pattern.split('/')) {
    if (segment.includes('+') && segment !== '+') {
      throw badRequest(`failed to parse policy: path "${pattern}": "+" must be a whole path segment`);
    }
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
