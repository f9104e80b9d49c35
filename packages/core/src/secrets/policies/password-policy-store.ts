import { type PasswordPolicy, parsePasswordPolicy } from '../../lib/password.ts';
import { itemKind } from '../../storage/item-mac.ts';
import type { Store } from '../../storage/store.ts';

/**
 * Named password policies (`sys/policies/password/:name`) live in one partition of their own, so any engine,
 * mounted anywhere, can read them.
 */
export const passwordPolicyPartition = 'password-policies';

/**
 * A password policy item is authenticated whole (`storage/item-mac.ts`): its rules decide how guessable every password
 * an engine generates is, so a table writer must not be able to weaken them. A forged or MAC-less one reads as absent.
 */
export const passwordPolicyKind = itemKind('password-policy', [], { epoch: 'init' });

export interface StoredPasswordPolicy {
  policy: string;
}

/** The parsed policy called `name`, or undefined when there is none. */
export async function loadPasswordPolicy(
  services: { store: Pick<Store, 'getVerified'> },
  name: string,
): Promise<PasswordPolicy | undefined> {
  const item = await services.store.getVerified(passwordPolicyKind, passwordPolicyPartition, name);
  return item ? parsePasswordPolicy((item.value as StoredPasswordPolicy).policy) : undefined;
}
