import { ParameterConstraints } from './parameter-constraints.ts';
import type { Capability, PathRule } from './policy-document.ts';

/** What the rules for one pattern grant, merged across policies. */
interface Permissions {
  capabilities: Set<Capability>;
  /** Absent unless some rule for the pattern constrains parameters: the common case costs one check. */
  parameters: ParameterConstraints | undefined;
}

/** The capabilities whose requests Vault checks against parameter constraints. */
const parameterCheckedCapabilities = new Set<Capability>(['read', 'create', 'update', 'patch']);

interface CompiledRule extends Permissions {
  pattern: string;
  matcher: RegExp;
  firstWildcard: number;
  endsInGlob: boolean;
  segmentWildcards: number;
}

/**
 * The merged rules of a token's policies. Rules for the same pattern across policies are unioned
 * (deny wins, and drops parameter constraints); among different matching patterns the most specific one
 * decides, capabilities and parameter constraints alike, as Vault orders them.
 */
export class Acl {
  private readonly exact = new Map<string, Permissions>();
  private readonly wildcard: CompiledRule[] = [];

  constructor(
    ruleSets: PathRule[][],
    readonly root = false,
  ) {
    const merged = new Map<string, Permissions>();
    for (const rule of ruleSets.flat()) {
      const permissions = merged.get(rule.pattern) ?? { capabilities: new Set<Capability>(), parameters: undefined };
      merged.set(rule.pattern, permissions);
      if (permissions.capabilities.has('deny')) continue;
      if (rule.capabilities.includes('deny')) {
        permissions.capabilities = new Set(['deny']);
        permissions.parameters = undefined;
        continue;
      }
      for (const capability of rule.capabilities) permissions.capabilities.add(capability);
      if (!rule.parameters) continue;
      permissions.parameters ??= new ParameterConstraints();
      permissions.parameters.add(rule.parameters);
    }
    for (const [pattern, permissions] of merged) {
      if (!pattern.includes('*') && !pattern.split('/').includes('+')) {
        this.exact.set(pattern, permissions);
        continue;
      }
      const endsInGlob = pattern.endsWith('*');
      const segments = (endsInGlob ? pattern.slice(0, -1) : pattern).split('/');
      // As Vault's `+`, a segment wildcard matches any one segment, even an empty one.
      const regex = segments.map((segment) => (segment === '+' ? '[^/]*' : escapeRegex(segment))).join('/');
      const plusAt = segments.indexOf('+');
      // The character offset of the first `+` (after its slash), or of the trailing `*`.
      const firstWildcard = plusAt === -1 ? pattern.length - 1 : segments.slice(0, plusAt).join('/').length + (plusAt > 0 ? 1 : 0);
      this.wildcard.push({
        pattern,
        ...permissions,
        matcher: new RegExp(`^${regex}${endsInGlob ? '.*' : ''}$`, 's'),
        firstWildcard,
        endsInGlob,
        segmentWildcards: segments.filter((segment) => segment === '+').length,
      });
    }
  }

  /**
   * What a token may do on a path, as `sys/capabilities*` report it. Like Vault, this is looked up the way
   * a list is (an exact rule for the path without its trailing slash also counts).
   */
  capabilities(path: string): Capability[] {
    if (this.root) return ['root' as Capability];
    const granted = this.resolve(path, true)?.capabilities;
    return granted && granted.size > 0 ? [...granted] : ['deny'];
  }

  /**
   * Whether the token may do `capability` on `path`. With `parameters` (the request's body fields, or the
   * query parameters of a read), a read, create, update or patch must also meet the deciding rule's
   * parameter constraints; without them only capabilities are checked.
   */
  allows(path: string, capability: Capability, needsSudo = false, parameters?: Record<string, unknown>): boolean {
    if (this.root) return true;
    // Vault lists directories: `LIST secret/app` is checked as `secret/app/`, which `secret/app/*` covers.
    const listing = capability === 'list';
    const granted = this.resolve(listing && !path.endsWith('/') ? `${path}/` : path, listing);
    if (!granted || granted.capabilities.has('deny')) return false;
    if (!granted.capabilities.has(capability) || (needsSudo && !granted.capabilities.has('sudo'))) return false;
    if (!granted.parameters || !parameters || !parameterCheckedCapabilities.has(capability)) return true;
    return granted.parameters.permits(parameters);
  }

  /** The permissions of the rule that decides `path`: an exact rule, else the most precise wildcard rule. */
  private resolve(path: string, listing: boolean): Permissions | undefined {
    const trimmed = path.endsWith('/') ? path.slice(0, -1) : path;
    const exact = this.exact.get(path) ?? (listing ? this.exact.get(trimmed) : undefined);
    if (exact) return exact;
    if (!listing || trimmed === path) return mostPrecise(this.candidates(path));
    // A list of `a/b/` weighs rules for `a/b` too (`a/+` grants it), but a more precise deny still wins.
    const candidates = [...this.candidates(trimmed), ...this.candidates(path)];
    const deny = mostPrecise(candidates.filter((rule) => rule.capabilities.has('deny')));
    const lister = mostPrecise(candidates.filter((rule) => rule.capabilities.has('list')));
    if (deny && (!lister || !morePrecise(lister, deny))) return deny;
    return lister ?? mostPrecise(candidates);
  }

  /** As Vault: the longest matching `*` prefix, and every matching rule with `+` segments. */
  private candidates(path: string): CompiledRule[] {
    let longestGlob: CompiledRule | undefined;
    const matching: CompiledRule[] = [];
    for (const rule of this.wildcard) {
      if (!rule.matcher.test(path)) continue;
      if (rule.segmentWildcards > 0) matching.push(rule);
      else if (!longestGlob || rule.pattern.length > longestGlob.pattern.length) longestGlob = rule;
    }
    return longestGlob ? [longestGlob, ...matching] : matching;
  }
}

function mostPrecise(rules: CompiledRule[]): CompiledRule | undefined {
  let best: CompiledRule | undefined;
  for (const rule of rules) if (!best || morePrecise(rule, best)) best = rule;
  return best;
}

/** Vault's ordering: later first wildcard, not ending in `*`, fewer `+`, longer, then lexically larger. */
function morePrecise(a: CompiledRule, b: CompiledRule): boolean {
  if (a.firstWildcard !== b.firstWildcard) return a.firstWildcard > b.firstWildcard;
  if (a.endsInGlob !== b.endsInGlob) return !a.endsInGlob;
  if (a.segmentWildcards !== b.segmentWildcards) return a.segmentWildcards < b.segmentWildcards;
  if (a.pattern.length !== b.pattern.length) return a.pattern.length > b.pattern.length;
  return a.pattern > b.pattern;
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
