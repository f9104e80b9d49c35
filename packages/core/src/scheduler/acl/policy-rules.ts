/**
 * Nomad ACL policy documents (HCL or JSON) and the capability checks built from them: `namespace` rules
 * with a policy (read, write, scale, deny) and/or capabilities, and `node`, `agent`, `operator`, `plugin`,
 * `quota`, `node_pool`, `host_volume` rules with a policy.
 */
import { type HclBody, HclSyntaxError, type HclValue, parseHcl } from '../../lib/hcl.ts';

export type Disposition = 'read' | 'write' | 'deny';

export interface PolicyRules {
  namespaces: Array<{ name: string; capabilities: string[] }>;
  node?: Disposition;
  agent?: Disposition;
  operator?: Disposition;
}

export class PolicyParseError extends Error {}

const namespaceCapabilities = new Set([
  'deny',
  'list-jobs',
  'parse-job',
  'read-job',
  'submit-job',
  'dispatch-job',
  'read-logs',
  'read-fs',
  'alloc-exec',
  'alloc-node-exec',
  'alloc-lifecycle',
  'csi-register-plugin',
  'csi-write-volume',
  'csi-read-volume',
  'csi-list-volume',
  'csi-mount-volume',
  'list-scaling-policies',
  'read-scaling-policy',
  'read-job-scaling',
  'scale-job',
  'submit-recommendation',
  'sentinel-override',
  'host-volume-create',
  'host-volume-register',
  'host-volume-read',
  'host-volume-write',
  'host-volume-delete',
]);

const readCapabilities = [
  'list-jobs',
  'parse-job',
  'read-job',
  'csi-list-volume',
  'csi-read-volume',
  'read-job-scaling',
  'list-scaling-policies',
  'read-scaling-policy',
  'host-volume-read',
];
const expansions: Record<string, string[]> = {
  deny: ['deny'],
  read: readCapabilities,
  write: [
    ...readCapabilities,
    'scale-job',
    'submit-job',
    'dispatch-job',
    'read-logs',
    'read-fs',
    'alloc-exec',
    'alloc-lifecycle',
    'csi-mount-volume',
    'csi-write-volume',
    'submit-recommendation',
    'host-volume-create',
    'host-volume-register',
    'host-volume-write',
    'host-volume-delete',
  ],
  scale: ['list-scaling-policies', 'read-scaling-policy', 'read-job-scaling', 'scale-job'],
};

const simpleRules = ['node', 'agent', 'operator', 'plugin', 'quota', 'node_pool', 'host_volume'] as const;

/** Parses a policy's `Rules`; the message of a PolicyParseError says what is wrong. */
export function parsePolicyRules(text: string): PolicyRules {
  const body = text.trim().startsWith('{') ? jsonToBody(text) : hclBody(text);
  const rules: PolicyRules = { namespaces: [] };
  for (const key of Object.keys(body.attributes)) throw new PolicyParseError(`unexpected attribute "${key}"`);
  for (const block of body.blocks) {
    if (block.type === 'namespace') {
      const name = block.labels[0];
      if (name === undefined || block.labels.length !== 1) throw new PolicyParseError('a namespace rule needs one name');
      const policy = stringAttribute(block.body, 'policy', `namespace "${name}"`);
      const explicit = listAttribute(block.body, 'capabilities', `namespace "${name}"`);
      if (policy !== undefined && policy !== '' && !(policy in expansions)) {
        throw new PolicyParseError(`Invalid namespace policy: "${policy}" in namespace "${name}"`);
      }
      for (const capability of explicit) {
        if (!namespaceCapabilities.has(capability)) {
          throw new PolicyParseError(`Invalid namespace capability '${capability}' in namespace "${name}"`);
        }
      }
      rules.namespaces.push({ name, capabilities: [...new Set([...(policy ? (expansions[policy] ?? []) : []), ...explicit])] });
    } else if ((simpleRules as readonly string[]).includes(block.type)) {
      if (block.labels.length > 0 && block.type !== 'host_volume' && block.type !== 'node_pool') {
        throw new PolicyParseError(`the ${block.type} rule takes no label`);
      }
      const policy = stringAttribute(block.body, 'policy', block.type) ?? '';
      if (!['read', 'write', 'deny', ...(block.type === 'plugin' ? ['list'] : [])].includes(policy)) {
        throw new PolicyParseError(`Invalid ${block.type} policy: "${policy}"`);
      }
      if (block.type === 'node' || block.type === 'agent' || block.type === 'operator') {
        rules[block.type] = policy as Disposition;
      }
    } else {
      throw new PolicyParseError(`unexpected rule "${block.type}"`);
    }
  }
  return rules;
}

function hclBody(text: string): HclBody {
  try {
    return parseHcl(text);
  } catch (error) {
    if (error instanceof HclSyntaxError) throw new PolicyParseError(error.message);
    throw error;
  }
}

/** The JSON form of a policy, as HCL's JSON syntax maps it: `{"namespace": {"default": {"policy": "read"}}}`. */
function jsonToBody(text: string): HclBody {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new PolicyParseError((error as Error).message);
  }
  if (!isObject(json)) throw new PolicyParseError('a JSON policy must be an object');
  const body: HclBody = { attributes: {}, blocks: [] };
  for (const [type, value] of Object.entries(json)) {
    if (!isObject(value)) throw new PolicyParseError(`"${type}" must be an object`);
    if (type === 'namespace' || type === 'host_volume' || type === 'node_pool') {
      for (const [label, inner] of Object.entries(value)) {
        if (!isObject(inner)) throw new PolicyParseError(`${type} "${label}" must be an object`);
        body.blocks.push({ type, labels: [label], body: { attributes: inner, blocks: [] } });
      }
    } else {
      body.blocks.push({ type, labels: [], body: { attributes: value, blocks: [] } });
    }
  }
  return body;
}

const isObject = (value: unknown): value is Record<string, HclValue> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function stringAttribute(body: HclBody, name: string, where: string): string | undefined {
  const value = body.attributes[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new PolicyParseError(`${where}: ${name} must be a string`);
  return value;
}

function listAttribute(body: HclBody, name: string, where: string): string[] {
  const value = body.attributes[name];
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
    throw new PolicyParseError(`${where}: ${name} must be a list of strings`);
  }
  return value as string[];
}

/** What a token may do: the union of its policies' rules, where deny wins. */
export class Acl {
  private constructor(
    readonly management: boolean,
    private readonly namespaces: Map<string, Set<string>>,
    private readonly simple: Partial<Record<'node' | 'agent' | 'operator', Disposition>>,
  ) {}

  static readonly managementAcl = new Acl(true, new Map(), {});
  static readonly denyAll = new Acl(false, new Map(), {});

  static fromRules(all: PolicyRules[]): Acl {
    const namespaces = new Map<string, Set<string>>();
    const simple: Partial<Record<'node' | 'agent' | 'operator', Disposition>> = {};
    for (const rules of all) {
      for (const { name, capabilities } of rules.namespaces) {
        const set = namespaces.get(name) ?? new Set<string>();
        for (const capability of capabilities) set.add(capability);
        namespaces.set(name, set);
      }
      for (const kind of ['node', 'agent', 'operator'] as const) {
        const next = rules[kind];
        if (next) simple[kind] = stronger(simple[kind], next);
      }
    }
    return new Acl(false, namespaces, simple);
  }

  /** Nomad's lookup: an exact namespace rule, else the closest matching glob. */
  private namespaceCapabilities(namespace: string): Set<string> | undefined {
    const exact = this.namespaces.get(namespace);
    if (exact) return exact;
    let best: { set: Set<string>; score: number } | undefined;
    for (const [pattern, set] of this.namespaces) {
      if (!pattern.includes('*') || !globMatches(pattern, namespace)) continue;
      const score = namespace.length - pattern.replaceAll('*', '').length;
      if (!best || score < best.score) best = { set, score };
    }
    return best?.set;
  }

  allowNamespaceOperation(namespace: string, capability: string): boolean {
    if (this.management) return true;
    const set = this.namespaceCapabilities(namespace);
    return !!set && !set.has('deny') && set.has(capability);
  }

  /** True when a `*` namespace rule grants the capability (what `namespace=*` on the event stream needs). */
  allowAllNamespaces(capability: string): boolean {
    if (this.management) return true;
    const set = this.namespaces.get('*');
    return !!set && !set.has('deny') && set.has(capability);
  }

  allow(kind: 'node' | 'agent' | 'operator', needed: 'read' | 'write'): boolean {
    if (this.management) return true;
    const have = this.simple[kind];
    return have === 'write' || (have === 'read' && needed === 'read');
  }
}

function stronger(current: Disposition | undefined, next: Disposition): Disposition {
  if (current === 'deny' || next === 'deny') return 'deny';
  if (current === 'write' || next === 'write') return 'write';
  return 'read';
}

function globMatches(pattern: string, value: string): boolean {
  const regex = new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  return regex.test(value);
}
