import type { Capability, PathRule } from './policy-document.ts';

interface CompiledRule {
  pattern: string;
  capabilities: Set<Capability>;
  matcher: RegExp;
  firstWildcard: number;
  endsInGlob: boolean;
  segmentWildcards: number;
}

/**
 * The merged rules of a token's policies. Rules for the same pattern across policies are unioned
 * (deny wins); among different matching patterns the most specific one decides, as Vault orders them.
 */
export class Acl {
  private readonly exact = new Map<string, Set<Capability>>();
  private readonly wildcard: CompiledRule[] = [];

  constructor(
    ruleSets: PathRule[][],
    readonly root = false,
  ) {
    const merged = new Map<string, Set<Capability>>();
    for (const rule of ruleSets.flat()) {
      const set = merged.get(rule.pattern) ?? new Set<Capability>();
      for (const capability of rule.capabilities) set.add(capability);
      merged.set(rule.pattern, set.has('deny') ? new Set(['deny']) : set);
    }
    for (const [pattern, capabilities] of merged) {
      if (!pattern.includes('*') && !pattern.split('/').includes('+')) {
        this.exact.set(pattern, capabilities);
        continue;
      }
      const endsInGlob = pattern.endsWith('*');
      const segments = (endsInGlob ? pattern.slice(0, -1) : pattern).split('/');
      const regex = segments.map((segment) => (segment === '+' ? '[^/]+' : escapeRegex(segment))).join('/');
      const firstPlus = segments.indexOf('+') === -1 ? Number.POSITIVE_INFINITY : segments.slice(0, segments.indexOf('+')).join('/').length;
      const firstWildcard = Math.min(firstPlus, endsInGlob ? pattern.length - 1 : Number.POSITIVE_INFINITY);
      this.wildcard.push({
        pattern,
        capabilities,
        matcher: new RegExp(`^${regex}${endsInGlob ? '.*' : ''}$`, 's'),
        firstWildcard,
        endsInGlob,
        segmentWildcards: segments.filter((segment) => segment === '+').length,
      });
    }
  }

  capabilities(path: string): Capability[] {
    if (this.root) return ['root' as Capability];
    const exact = this.exact.get(path);
    if (exact) return [...exact];
    let best: CompiledRule | undefined;
    for (const rule of this.wildcard) {
      if (rule.matcher.test(path) && (!best || morePrecise(rule, best))) best = rule;
    }
    return best ? [...best.capabilities] : ['deny'];
  }

  allows(path: string, capability: Capability, needsSudo = false): boolean {
    if (this.root) return true;
    const granted = this.capabilities(path);
    if (granted.includes('deny')) return false;
    return granted.includes(capability) && (!needsSudo || granted.includes('sudo'));
  }
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
