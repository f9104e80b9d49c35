import { type PasswordPolicy, parsePasswordPolicy } from '../../lib/password.ts';
import type { Store } from '../../storage/store.ts';

/**
 * Named password policies (`sys/policies/password/:name`) live in one partition of their own, so any engine,
 * mounted anywhere, can read them.
 */
export const passwordPolicyPartition = 'password-policies';

export interface StoredPasswordPolicy {
  policy: string;
}

/** The parsed policy called `name`, or undefined when there is none. */
export async function loadPasswordPolicy(
  services: { store: Pick<Store, 'get'> },
  name: string,
): Promise<PasswordPolicy | undefined> {
  const item = await services.store.get(passwordPolicyPartition, name);
  return item ? parsePasswordPolicy((item.value as StoredPasswordPolicy).policy) : undefined;
}
