/**
 * Nomad ACL policy documents (HCL or JSON) and the capability checks built from them: `namespace` rules
 * with a policy (read, write, scale, deny) and/or capabilities, and `node`, `agent`, `operator`, `plugin`,
 * `quota`, `node_pool`, `host_volume`, `sentinel` rules. Parsed as nomad/acl/policy.go parses them (hcl v1, the
 * same parser as Vault's policies, hcl-v1.ts), validated with its rules.
 */

import { equalFold, HclSyntaxError, keyName, type ObjectItem, parseHclV1 } from '../../lib/hcl-v1.ts';
import { decodeSlice, decodeString, fieldSources, structList } from '../../lib/hcl-v1-decode.ts';
import { globMatches } from '../../lib/glob.ts';
import { closestGlob } from './closest-glob.ts';

export type Disposition = 'read' | 'write' | 'deny';

export interface PolicyRules {
  /** Each rule's capabilities in Nomad's order: the listed ones, then the policy's expansion (then implied ones). */
  namespaces: Array<{ name: string; capabilities: string[] }>;
  nodePools: Array<{ name: string; capabilities: string[] }>;
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
  'sentinel-override',
  'csi-register-plugin',
  'csi-write-volume',
  'csi-read-volume',
  'csi-list-volume',
  'csi-mount-volume',
  'host-volume-create',
  'host-volume-register',
  'host-volume-read',
  'host-volume-write',
  'host-volume-delete',
  'list-scaling-policies',
  'read-scaling-policy',
  'read-job-scaling',
  'scale-job',
  'submit-recommendation',
  'register-job',
  'revert-job',
  'deregister-job',
  'purge-job',
  'evaluate-job',
  'plan-job',
  'tag-job-version',
  'stable-job',
  'fail-deployment',
  'pause-deployment',
  'promote-deployment',
  'unblock-deployment',
  'cancel-deployment',
  'set-alloc-health-deployment',
  'gc-allocation',
  'pause-allocation',
  'force-periodic-job',
  'delete-service-registration',
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
/** nomad/acl/policy.go expandNamespacePolicy. */
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
  ],
  scale: [
    'list-scaling-policies',
    'read-scaling-policy',
    'read-job-scaling',
    'scale-job',
    'read-job',
    'submit-recommendation',
  ],
};
/** nomad/acl/policy.go expandNodePoolPolicy (`scale` grants nothing on a pool). */
const nodePoolExpansions: Record<string, string[]> = {
  deny: ['deny'],
  read: ['read'],
  write: ['delete', 'read', 'write'],
};
/** nomad/acl/policy.go expandNamespaceCapabilities: host volume capabilities imply the lesser ones. */
const implied: Record<string, string[]> = {
  'host-volume-write': ['host-volume-register', 'host-volume-create', 'host-volume-delete', 'host-volume-read'],
  'host-volume-register': ['host-volume-create', 'host-volume-read'],
  'host-volume-create': ['host-volume-read'],
};

const policies = ['deny', 'read', 'write', 'scale'];
const validName = {
  namespace: /^[a-zA-Z0-9\-*]{1,128}$/,
  node_pool: /^[a-zA-Z0-9\-_*]{1,128}$/,
  host_volume: /^[a-zA-Z0-9\-*]{1,128}$/,
};
const labelled = ['namespace', 'node_pool', 'host_volume'] as const;
const simple = ['agent', 'node', 'operator', 'sentinel', 'quota', 'plugin'] as const;
const labelledCapabilities: Record<string, Set<string>> = {
  namespace: namespaceCapabilities,
  node_pool: new Set(['delete', 'deny', 'read', 'write']),
  host_volume: new Set(['deny', 'mount-readonly', 'mount-readwrite']),
};
const simpleCapabilities: Record<string, Set<string>> = {
  operator: new Set(['deny', 'snapshot-save', 'license-read', 'keyring-rotate', 'keyring-read', 'keyring-delete']),
  sentinel: new Set(['deny', 'sentinel-read', 'sentinel-submit', 'sentinel-delete']),
};

/**
 * Parses a policy's `Rules`; the message of a PolicyParseError says what is wrong. As Nomad: empty rules are an
 * empty policy, anything else must name at least one rule; top-level keys are matched ignoring case and any
 * other key (or a label on a block that takes none) is refused. Unlike Nomad, a key given twice in one object (in
 * HCL or JSON, quoted or not) and a rule given twice are refused: Nomad merges them, keeping the last `policy`, so
 * a `deny` followed by a `write` would grant the write.
 */
export function parsePolicyRules(text: string): PolicyRules {
  const rules: PolicyRules = { namespaces: [], nodePools: [] };
  if (text === '') return rules;
  try {
    const root = parseHclV1(text);
    let named = 0;
    const merged = new Map<(typeof simple)[number], SimpleFields>();
    const given = new Map<string, string>();
    for (const item of root.items) {
      const first = item.keys[0] as ObjectItem['keys'][number];
      const type = keyName(first);
      const kind = [...labelled, ...simple].find((known) => equalFold(known, type));
      if (!kind) throw new PolicyParseError(`Invalid or duplicate policy keys: ${type}`);
      // Nomad merges a rule given twice (`node { policy = "deny" }` then `node { policy = "write" }` grants write).
      const rule = [kind, ...item.keys.slice(1).map((key) => JSON.stringify(keyName(key)))].join(' ');
      const earlier = given.get(rule);
      if (earlier)
        throw new PolicyParseError(
          `At ${first.line}:${first.column}: ${rule} is given twice (first at ${earlier}); a rule may be given only once in a policy`,
        );
      given.set(rule, `${first.line}:${first.column}`);
      named++;
      if ((labelled as readonly string[]).includes(kind)) {
        labelledRule(rules, kind as (typeof labelled)[number], item);
      } else {
        // One block per kind (a repeat is refused above); its fields decode as Nomad decodes them.
        const simpleKind = kind as (typeof simple)[number];
        merged.set(simpleKind, simpleFields(simpleKind, item, merged.get(simpleKind)));
      }
    }
    if (named === 0) throw new PolicyParseError(`Invalid policy: ${text.slice(0, 80)}`);
    for (const [kind, fields] of merged) simpleRule(rules, kind, fields);
  } catch (error) {
    if (error instanceof HclSyntaxError) throw new PolicyParseError(error.message);
    throw error;
  }
  return rules;
}

/** `namespace "name" { policy = "…" capabilities = [ … ] }`, and the same for node pools and host volumes. */
function labelledRule(rules: PolicyRules, kind: (typeof labelled)[number], item: ObjectItem): void {
  const [, label, ...extra] = item.keys;
  if (!label) throw new PolicyParseError(`Invalid ${kind.replace('_', ' ')} name: a ${kind} rule needs a name`);
  if (extra.length > 0)
    throw new PolicyParseError(`Invalid or duplicate policy keys: ${extra.map(keyName).join(', ')}`);
  const name = keyName(label);
  if (!validName[kind].test(name)) throw new PolicyParseError(`Invalid ${kind.replace('_', ' ')} name: "${name}"`);
  const body = structList(item.value, `${kind} "${name}"`);
  let policy = '';
  for (const source of fieldSources(body, 'policy')) policy = decodeString(source, `${kind} "${name}".policy`);
  let capabilities: string[] = [];
  for (const source of fieldSources(body, 'capabilities')) {
    capabilities = decodeSlice(source, `${kind} "${name}".capabilities`, decodeString, capabilities);
  }
  if (policy !== '' && !policies.includes(policy))
    throw new PolicyParseError(`Invalid ${kind.replace('_', ' ')} policy: "${policy}" for "${name}"`);
  for (const capability of capabilities) {
    if (!labelledCapabilities[kind]?.has(capability)) {
      throw new PolicyParseError(`Invalid ${kind.replace('_', ' ')} capability '${capability}' for "${name}"`);
    }
  }
  if (kind === 'node_pool') {
    rules.nodePools.push({
      name,
      capabilities: [...capabilities, ...(policy ? (nodePoolExpansions[policy] ?? []) : [])],
    });
    return;
  }
  if (kind !== 'namespace') return;
  const granted = [...capabilities, ...(policy ? (expansions[policy] ?? []) : [])];
  for (const capability of [...granted]) granted.push(...(implied[capability] ?? []));
  rules.namespaces.push({ name, capabilities: granted });
}

interface SimpleFields {
  policy: string;
  capabilities: string[];
}

/** The fields of `node { policy = "read" }` and the other rules without a name, decoded over any earlier block. */
function simpleFields(
  kind: (typeof simple)[number],
  item: ObjectItem,
  earlier: SimpleFields | undefined,
): SimpleFields {
  if (item.keys.length > 1)
    throw new PolicyParseError(`Invalid or duplicate policy keys: ${item.keys.slice(1).map(keyName).join(', ')}`);
  const body = structList(item.value, kind);
  let policy = earlier?.policy ?? '';
  for (const source of fieldSources(body, 'policy')) policy = decodeString(source, `${kind}.policy`);
  let capabilities = earlier?.capabilities ?? [];
  for (const source of fieldSources(body, 'capabilities'))
    capabilities = decodeSlice(source, `${kind}.capabilities`, decodeString, capabilities);
  return { policy, capabilities };
}

/** Validates a rule without a name, as Nomad does, and keeps what the ACL uses. */
function simpleRule(rules: PolicyRules, kind: (typeof simple)[number], { policy, capabilities }: SimpleFields): void {
  const allowed =
    kind === 'plugin'
      ? ['deny', 'read', 'list', 'write']
      : kind === 'operator' || kind === 'sentinel'
        ? ['', ...policies]
        : policies;
  // `scale` means nothing for these in Nomad's ACL; refusing it keeps a policy from meaning less than it says.
  if (!allowed.includes(policy) || (policy === 'scale' && kind !== 'operator' && kind !== 'sentinel')) {
    throw new PolicyParseError(`Invalid ${kind} policy: "${policy}"`);
  }
  const known = simpleCapabilities[kind];
  for (const capability of capabilities) {
    if (!known?.has(capability)) throw new PolicyParseError(`Invalid ${kind} capability '${capability}'`);
  }
  if (kind === 'node' || kind === 'agent' || kind === 'operator') {
    if (policy === '' || policy === 'scale') return;
    rules[kind] = policy as Disposition;
  }
}

/**
 * Capability sets merged as Nomad's NewACL merges them, rule by rule in policy order: a set that holds `deny` takes
 * nothing more, and a `deny` clears what the set held before.
 */
function mergeCapabilities(target: Map<string, Set<string>>, name: string, capabilities: readonly string[]): void {
  let set = target.get(name);
  if (!set) {
    set = new Set<string>();
    target.set(name, set);
  }
  if (set.has('deny')) return;
  for (const capability of capabilities) {
    if (capability === 'deny') {
      set.clear();
      set.add('deny');
      return;
    }
    set.add(capability);
  }
}

/** Rules by exact name and by glob (a name with a `*`), as Nomad keeps them in two trees. */
interface NamedRules {
  exact: Map<string, Set<string>>;
  globs: Map<string, Set<string>>;
}

function namedRules(all: PolicyRules[], pick: (rules: PolicyRules) => PolicyRules['namespaces']): NamedRules {
  const exact = new Map<string, Set<string>>();
  const globs = new Map<string, Set<string>>();
  for (const rules of all) {
    for (const { name, capabilities } of pick(rules)) {
      mergeCapabilities(name.includes('*') ? globs : exact, name, capabilities);
    }
  }
  return { exact, globs };
}

/** Nomad's lookup: the exact rule, else the closest matching glob (`closest-glob.ts`). */
function matching(rules: NamedRules, name: string): Set<string> | undefined {
  return rules.exact.get(name) ?? closestGlob(rules.globs, name, globMatches);
}

/** What a token may do: its policies' rules merged as Nomad merges them (`acl/acl.go`), where deny wins. */
export class SchedulerAcl {
  private constructor(
    readonly management: boolean,
    private readonly namespaces: NamedRules,
    private readonly nodePools: NamedRules,
    private readonly simple: Partial<Record<'node' | 'agent' | 'operator', Disposition>>,
  ) {}

  private static readonly none: NamedRules = { exact: new Map(), globs: new Map() };
  static readonly managementAcl = new SchedulerAcl(true, SchedulerAcl.none, SchedulerAcl.none, {});
  static readonly denyAll = new SchedulerAcl(false, SchedulerAcl.none, SchedulerAcl.none, {});

  static fromRules(all: PolicyRules[]): SchedulerAcl {
    const simple: Partial<Record<'node' | 'agent' | 'operator', Disposition>> = {};
    for (const rules of all) {
      for (const kind of ['node', 'agent', 'operator'] as const) {
        const next = rules[kind];
        if (next) simple[kind] = stronger(simple[kind], next);
      }
    }
    return new SchedulerAcl(
      false,
      namedRules(all, (rules) => rules.namespaces),
      namedRules(all, (rules) => rules.nodePools ?? []),
      simple,
    );
  }

  /** Nomad's AllowNamespaceOperation; `*` is allowed when any namespace rule grants the operation. */
  allowNamespaceOperation(namespace: string, capability: string): boolean {
    if (this.management) return true;
    if (namespace === '*' && this.anyNamespace((set) => set.has(capability))) return true;
    return matching(this.namespaces, namespace)?.has(capability) ?? false;
  }

  /** Nomad's AllowNamespace: any operation at all (a rule with a capability that is not `deny`). */
  allowNamespace(namespace: string): boolean {
    if (this.management) return true;
    const allows = (set: Set<string>) => set.size > 0 && !set.has('deny');
    if (namespace === '*' && this.anyNamespace(allows)) return true;
    const set = matching(this.namespaces, namespace);
    return !!set && allows(set);
  }

  private anyNamespace(holds: (set: Set<string>) => boolean): boolean {
    return [...this.namespaces.exact.values(), ...this.namespaces.globs.values()].some(holds);
  }

  /** True when a `*` namespace rule grants the capability (what `namespace=*` on the event stream needs). */
  allowAllNamespaces(capability: string): boolean {
    if (this.management) return true;
    const set = this.namespaces.globs.get('*');
    return !!set && !set.has('deny') && set.has(capability);
  }

  /** Nomad's AllowNodePoolOperation: `read`, `write` or `delete` on the pool, by its exact rule or closest glob. */
  allowNodePoolOperation(pool: string, capability: 'read' | 'write' | 'delete'): boolean {
    if (this.management) return true;
    return matching(this.nodePools, pool)?.has(capability) ?? false;
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
