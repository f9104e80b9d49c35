import { badRequest } from '../../lib/errors.ts';
import { goToLower, goTrimSpace } from '../../lib/go-strings.ts';

/**
 * Policy names as Vault keeps them since CVE-2025-5999 (HCSEC-2025-13): trimmed with Go's `strings.TrimSpace`,
 * lower-cased with Go's `strings.ToLower`, empty names dropped, duplicates removed (the first kept). Every place
 * that stores or compares a policy name goes through here, so `" root"`, `"ROOT"` and `"root\u0085"` are all
 * `root` before anything decides what they grant.
 */
export function sanitisePolicyNames(names: readonly string[]): string[] {
  return [...new Set(names.map(sanitisePolicyName).filter((name) => name !== ''))];
}

/** One policy name: Go's `strings.ToLower(strings.TrimSpace(name))`. */
export const sanitisePolicyName = (name: string): string => goToLower(goTrimSpace(name));

/** The refusal Vault gives when an auth method's login would carry the root policy (HTTP 400). */
export const authMethodsCannotCreateRoot = () => badRequest('auth methods cannot create root tokens');

/** Refuses a login's (or an auth role's) policy list that names `root` in any spelling. */
export function refuseRootFromAuthMethod(names: readonly string[]): void {
  if (sanitisePolicyNames(names).includes('root')) throw authMethodsCannotCreateRoot();
}
