import { readFileSync } from 'node:fs';

/**
 * The backend files each family's loader imports in `family-list.ts`, under `packages/core/src/secrets/` (e.g.
 * `engines/kv/kv-backend.ts`, whose chunk esbuild names `kv-backend-<hash>.mjs`), read from the list's source: what a
 * family's zip must hold, and no other family's.
 */
export function backendFilesOfFamilies(
  source = readFileSync(new URL('../../packages/core/src/secrets/family-list.ts', import.meta.url), 'utf8'),
): Record<string, string[]> {
  const files: Record<string, string[]> = {};
  let family: string | undefined;
  for (const line of source.split('\n')) {
    family = /^ {2}'?([\w-]+)'?: async/.exec(line)?.[1] ?? family;
    for (const [, file] of line.matchAll(/import\('\.\/([^']*-backend\.ts)'\)/g))
      if (family && file) files[family] = [...(files[family] ?? []), file];
  }
  return files;
}

/** The backend's name in a backend file's path: `engines/kv/kv-backend.ts` is `kv`. */
export const backendName = (file: string): string => file.replace(/^.*\//, '').replace(/-backend\.ts$/, '');

/** The libraries only some families load (a family's expectation lists those it bundles). */
export const familyPackages = ['ldapts', 'google-auth-library', 'openid-client', 'peggy'];
/** Which of them each family's own code brings; a family not named brings none. */
const librariesOf: Record<string, string[]> = { jwt: ['openid-client'], ldap: ['ldapts'] };

/**
 * What a family's function (and its engine's job) must bundle, derived from the family list: its backend files, the
 * engine and login folders they are in (`parts`, among `candidates`: every such folder the check looks for) and the
 * family libraries of `librariesOf`.
 */
export function expectedBundle(
  family: string,
  candidates: readonly string[],
  files: Record<string, string[]> = backendFilesOfFamilies(),
): { backends: string[]; parts: string[]; packages: string[] } {
  const backends = files[family] ?? [];
  const folders = new Set(backends.map((file) => file.replace(/\/[^/]*$/, '')));
  return {
    backends,
    parts: candidates.filter((part) => folders.has(part)),
    packages: librariesOf[family] ?? [],
  };
}
