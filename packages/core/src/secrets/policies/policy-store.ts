import type { Clock } from '../../lib/clock.ts';
import { badRequest } from '../../lib/errors.ts';
import { itemKind } from '../../storage/item-mac.ts';
import type { Store } from '../../storage/store.ts';
import { Acl } from './acl.ts';
import { type PathRule, parsePolicyDocument } from './policy-document.ts';
import { sanitisePolicyName, sanitisePolicyNames } from './policy-names.ts';

/** What every token gets unless created with `no_default_policy`: managing itself, nothing else. */
export const defaultPolicyText = `# Allow tokens to look up their own properties
path "auth/token/lookup-self" {
  capabilities = ["read"]
}

# Allow tokens to renew themselves
path "auth/token/renew-self" {
  capabilities = ["update"]
}

# Allow tokens to revoke themselves
path "auth/token/revoke-self" {
  capabilities = ["update"]
}

# Allow a token to look up its own capabilities on a path
path "sys/capabilities-self" {
  capabilities = ["update"]
}

# Allow a token to look up and renew leases it holds
path "sys/leases/lookup" {
  capabilities = ["update"]
}
path "sys/leases/renew" {
  capabilities = ["update"]
}
`;

export interface StoredPolicy {
  name: string;
  text: string;
  rules: PathRule[];
}

const defaultRules = parsePolicyDocument(defaultPolicyText);

/** A policy item is authenticated whole (`storage/item-mac.ts`): a forged or moved policy reads as absent. */
export const policyKind = itemKind('acl-policy', [], { epoch: 'init' });

/**
 * ACL policies (`pk = policies`, `sk = acl/<name>`). Compiled ACLs are cached per process and refreshed
 * after `cacheSeconds`, so the check before every request costs no table read in the common case.
 */
export class PolicyStore {
  private readonly rules = new Map<string, { rules: PathRule[] | undefined; loadedAt: number }>();
  private readonly acls = new Map<string, { acl: Acl; loadedAt: number }>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly cacheSeconds: number,
  ) {}

  async get(name: string): Promise<StoredPolicy | undefined> {
    const key = normaliseName(name);
    if (key === 'root') return { name: 'root', text: '', rules: [] };
    const item = await this.store.getVerified(policyKind, 'policies', `acl/${key}`);
    if (item) return { name: key, text: item.text as string, rules: item.rules as PathRule[] };
    return key === 'default' ? { name: 'default', text: defaultPolicyText, rules: defaultRules } : undefined;
  }

  async put(name: string, text: string): Promise<void> {
    const key = normaliseName(name);
    if (key === 'root') throw badRequest('cannot update the root policy');
    const rules = parsePolicyDocument(text);
    await this.store.put(this.store.signed(policyKind, { pk: 'policies', sk: `acl/${key}`, name: key, text, rules }));
    this.invalidate();
  }

  async delete(name: string): Promise<void> {
    const key = normaliseName(name);
    if (key === 'root') throw badRequest('cannot delete the root policy');
    if (key === 'default') throw badRequest('cannot delete the default policy');
    await this.store.delete({ pk: 'policies', sk: `acl/${key}` });
    this.invalidate();
  }

  async list(): Promise<string[]> {
    const stored = (await this.store.list('policies', { prefix: 'acl/' }))
      .filter((item) => this.store.verified(policyKind, item))
      .map((item) => item.name as string);
    return [...new Set(['default', ...stored, 'root'])].sort();
  }

  /** The ACL for a set of policy names; unknown names contribute nothing. */
  async acl(names: string[]): Promise<Acl> {
    // A name no policy can be stored under (a token created with `"a b"`) contributes nothing rather than failing
    // every request the token makes.
    const sorted = sanitisePolicyNames(names).filter(isPolicyName).sort();
    const key = sorted.join(',');
    const now = this.clock.now();
    const cached = this.acls.get(key);
    if (cached && now - cached.loadedAt <= this.cacheSeconds * 1000) return cached.acl;
    const ruleSets = await Promise.all(
      sorted.filter((name) => name !== 'root').map((name) => this.cachedRules(name, now)),
    );
    const acl = new Acl(
      ruleSets.filter((rules): rules is PathRule[] => rules !== undefined),
      sorted.includes('root'),
    );
    this.acls.set(key, { acl, loadedAt: now });
    return acl;
  }

  private async cachedRules(name: string, now: number): Promise<PathRule[] | undefined> {
    const cached = this.rules.get(name);
    if (cached && now - cached.loadedAt <= this.cacheSeconds * 1000) return cached.rules;
    const rules = (await this.get(name))?.rules;
    this.rules.set(name, { rules, loadedAt: now });
    return rules;
  }

  /** Forgets every compiled policy (a write here, or a new initialisation, whose epoch the old ones do not carry). */
  invalidate(): void {
    this.rules.clear();
    this.acls.clear();
  }
}

/**
 * The name a policy is stored and looked up under, the same for both: Go's `strings.ToLower(strings.TrimSpace(…))`,
 * as Vault's policy store sanitises names (see `policy-names.ts`), then checked.
 */
export function normaliseName(name: string): string {
  const key = sanitisePolicyName(name);
  if (!isPolicyName(key)) throw badRequest(`invalid policy name "${name}"`);
  return key;
}

const isPolicyName = (key: string) => /^[\w.\-@/]+$/.test(key);
