import type { Backend } from './framework/backend.ts';
import { allSecretsFamilies, familyList, type SecretsFamily } from './family-list.ts';
import { builtinMountPaths } from './mounts/mount-table.ts';

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

/**
 * Where a backend is mounted unless a stage says otherwise: a built-in where the core puts it (`sys`, `auth/token`,
 * `identity`), else its declared `defaultPath` (kv: `secret`), else `<type>` for an engine and `auth/<type>` for a
 * login method. The stages' default mounts (stacks/stage-config.ts) and the suite's engine tables derive from it.
 */
export function defaultMountPath(backend: Backend): string {
  return (
    builtinMountPaths.get(backend.type) ??
    backend.defaultPath ??
    (backend.kind === 'auth' ? `auth/${backend.type}` : backend.type)
  );
}

/** Every backend but the built-ins (which the core mounts itself), at its default mount path. */
export const defaultMountsOf = (backends: Backend[]): Array<{ path: string; type: string; kind: Backend['kind'] }> =>
  backends
    .filter((backend) => !builtinMountPaths.has(backend.type))
    .map((backend) => ({ path: defaultMountPath(backend), type: backend.type, kind: backend.kind }));
