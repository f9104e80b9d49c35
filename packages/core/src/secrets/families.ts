import type { Backend } from './framework/backend.ts';
import { allSecretsFamilies, familyList, type SecretsFamily } from './family-list.ts';

export { allSecretsFamilies, type SecretsFamily } from './family-list.ts';

/**
 * Every family's backends, loaded at once (`family-list.ts` is the list): for whoever serves or inspects them all —
 * the local process, the stacks, tests. A function bundles one family through `loadFamily` instead.
 */
export const secretsFamilies = Object.fromEntries(
  await Promise.all(allSecretsFamilies.map(async (family) => [family, await familyList[family]()] as const)),
) as Record<SecretsFamily, Backend[]>;

export const backendsOf = (families: SecretsFamily[]): Backend[] =>
  families.flatMap((family) => secretsFamilies[family]);
