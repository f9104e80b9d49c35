import { type FieldDecoder, ParameterConstraints } from './parameter-constraints.ts';
import type { Capability, PathRule } from './policy-document.ts';

/** What the rules for one path key grant, merged across policies. */
interface Permissions {
  capabilities: Set<Capability>;
  /** Absent unless some rule for the pattern constrains parameters: the common case costs one check. */
  parameters: ParameterConstraints | undefined;
}

/** The capabilities whose requests Vault checks against parameter constraints. */
const parameterCheckedCapabilities = new Set<Capability>(['read', 'create', 'update', 'patch', 'recover']);

interface SegmentRule {
  permissions: Permissions;
  /** The pattern without its trailing `*`, split on `/`. */
  parts: string[];
  isPrefix: boolean;
  /** Byte offset of the first `+` in the pattern, as Go's strings.Index reports it. */
  firstWildcard: number;
  /** The pattern without its trailing `*`, which Vault's ordering compares. */
  path: string;
}

interface Candidate {
  permissions: Permissions;
  firstWildcard: number;
  isPrefix: boolean;
  wildcards: number;
  path: string;
}

const byteLength = (text: string) => Buffer.byteLength(text);

/**
 * The merged rules of a token's policies, looked up as Vault's ACL does. Each rule lands in one of three tables:
 * segment-wildcard rules (`+` as a whole segment: the pattern is `+`, or has `/+` or starts with `+/`), prefix
 * rules (ending in `*`, stored without it) and exact rules (everything else: a `*` elsewhere or a `+` inside a
 * segment is an ordinary character). Rules with the same key are unioned (deny wins and drops parameter
 * constraints). An exact rule decides its path; otherwise the most precise of the longest prefix and the
 * matching segment rules decides, capabilities and parameter constraints alike.
 */
export class Acl {
  private readonly exact = new Map<string, Permissions>();
  private readonly prefixes = new Map<string, Permissions>();
  private readonly segments: SegmentRule[] = [];

  constructor(
    ruleSets: PathRule[][],
    readonly root = false,
  ) {
    const segmentRules = new Map<string, Permissions>();
    for (const rule of ruleSets.flat()) {
      const pattern = rule.pattern;
      let table = this.exact;
      let key = pattern;
      if (pattern === '+' || pattern.includes('/+') || pattern.startsWith('+/')) table = segmentRules;
      else if (pattern.endsWith('*')) [table, key] = [this.prefixes, pattern.slice(0, -1)];
      const permissions = table.get(key) ?? { capabilities: new Set<Capability>(), parameters: undefined };
      table.set(key, permissions);
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
    for (const [pattern, permissions] of segmentRules) {
      if (pattern === '') continue;
      const isPrefix = pattern.endsWith('*');
      const path = isPrefix ? pattern.slice(0, -1) : pattern;
      this.segments.push({
        permissions,
        parts: path.split('/'),
        isPrefix,
        firstWildcard: byteLength(pattern.slice(0, pattern.indexOf('+'))),
        path,
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
    return granted && granted.size > 0 && !granted.has('deny') ? [...granted] : ['deny'];
  }

  /**
   * Whether the token may do `capability` on `path`. With `parameters` (the request's body fields, or the
   * query parameters of a read), a read, create, update or patch must also meet the deciding rule's
   * parameter constraints; without them only capabilities are checked. `decodeField` says how the path decodes a
   * parameter, so that a denied value is also denied in any spelling that decodes to it (see `ParameterConstraints`).
   */
  allows(
    path: string,
    capability: Capability,
    needsSudo = false,
    parameters?: Record<string, unknown>,
    decodeField?: FieldDecoder,
  ): boolean {
    if (this.root) return true;
    // Vault lists directories: `LIST secret/app` is checked as `secret/app/`, which `secret/app/*` covers.
    const listing = capability === 'list';
    const granted = this.resolve(listing && !path.endsWith('/') ? `${path}/` : path, listing);
    if (!granted || granted.capabilities.has('deny')) return false;
    if (!granted.capabilities.has(capability) || (needsSudo && !granted.capabilities.has('sudo'))) return false;
    if (!granted.parameters || !parameters || !parameterCheckedCapabilities.has(capability)) return true;
    return granted.parameters.permits(parameters, decodeField);
  }

  /**
   * Vault's AllowOperation lookup: exact, then (for a list) exact without the slash, then the non-exact rules. A
   * list of `a/b/` weighs the non-exact rules matching `a/b` and those matching `a/b/` together, as current
   * vault/acl.go does (resolveACLPermsForListOp, its fix of the bypass OpenBao published as GHSA-xp3c-3jw3-4vcr):
   * `kv/+` {list} matches only `kv/private`, `kv/private/*` {deny} only `kv/private/`, and the deny wins unless a
   * more precise rule grants list.
   */
  private resolve(requested: string, listing: boolean): Permissions | undefined {
    const path = requested.replace(/^\/+/, '');
    const exact = this.exact.get(path);
    if (exact) return exact;
    if (listing) {
      const withoutSlash = this.exact.get(path.endsWith('/') ? path.slice(0, -1) : path);
      if (withoutSlash) return withoutSlash;
    }
    if (listing && path.endsWith('/'))
      return forList([...this.candidates(path.slice(0, -1)), ...this.candidates(path)]);
    return mostPrecise(this.candidates(path));
  }

  /** Vault's prefixAndWCCandidatesForPath: the longest prefix rule and every matching segment rule. */
  private candidates(path: string): Candidate[] {
    const candidates: Candidate[] = [];
    let longest: string | undefined;
    for (const prefix of this.prefixes.keys()) {
      if (path.startsWith(prefix) && (longest === undefined || prefix.length > longest.length)) longest = prefix;
    }
    if (longest !== undefined) {
      const permissions = this.prefixes.get(longest) as Permissions;
      candidates.push({ permissions, firstWildcard: byteLength(longest), isPrefix: true, wildcards: 0, path: longest });
    }
    if (this.segments.length === 0) return candidates;
    const parts = path.split('/');
    for (const rule of this.segments) {
      if (parts.length < rule.parts.length || (!rule.isPrefix && parts.length !== rule.parts.length)) continue;
      let wildcards = 0;
      const matched = rule.parts.every((part, index) => {
        const actual = parts[index] as string;
        if (part === '+') {
          wildcards++;
          return true;
        }
        return part === actual || (rule.isPrefix && index === rule.parts.length - 1 && actual.startsWith(part));
      });
      if (matched)
        candidates.push({
          permissions: rule.permissions,
          firstWildcard: rule.firstWildcard,
          isPrefix: rule.isPrefix,
          wildcards,
          path: rule.path,
        });
    }
    return candidates;
  }
}

/** Vault's CheckAllowedFromNonExactPaths: the most precise candidate decides. */
function mostPrecise(candidates: Candidate[]): Permissions | undefined {
  let best: Candidate | undefined;
  for (const candidate of candidates) if (!best || morePrecise(candidate, best)) best = candidate;
  return best?.permissions;
}

/**
 * Vault's resolveACLPermsForListOp over the candidates of both spellings of a listed directory: the most precise
 * deny wins unless a more precise candidate grants list; else the most precise list grant; else the most precise.
 */
function forList(candidates: Candidate[]): Permissions | undefined {
  let deny: Candidate | undefined;
  let list: Candidate | undefined;
  for (const candidate of candidates) {
    const granted = candidate.permissions.capabilities;
    if (granted.has('deny') && (!deny || morePrecise(candidate, deny))) deny = candidate;
    if (granted.has('list') && (!list || morePrecise(candidate, list))) list = candidate;
  }
  if (deny && (!list || morePrecise(deny, list))) return deny.permissions;
  return list ? list.permissions : mostPrecise(candidates);
}

/** Vault's ordering: later first wildcard, not a prefix, fewer `+`, longer, then lexically larger. */
function morePrecise(a: Candidate, b: Candidate): boolean {
  if (a.firstWildcard !== b.firstWildcard) return a.firstWildcard > b.firstWildcard;
  if (a.isPrefix !== b.isPrefix) return !a.isPrefix;
  if (a.wildcards !== b.wildcards) return a.wildcards < b.wildcards;
  const lengthA = byteLength(a.path);
  const lengthB = byteLength(b.path);
  if (lengthA !== lengthB) return lengthA > lengthB;
  return Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)) > 0;
}
