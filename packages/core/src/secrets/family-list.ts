import type { Backend } from './framework/backend.ts';

/*
 * A family's or an engine job's function bundles that family alone: the stacks build it with
 * `process.env.KEYHAVEN_BUNDLED_FAMILY` replaced by the family's name (`bundledFamilyDefine` in stacks/functions.ts),
 * so esbuild folds every other loader's test below to false and leaves its `import()` out of the zip altogether. The
 * test is written out in each loader because esbuild folds the expression itself, not a variable or a call holding
 * it. Everywhere else (the local runtime, tests, the sweep) the variable is unset: every family.
 */
const notBundled = (family: string): Promise<never> =>
  Promise.reject(new Error(`this function's bundle does not hold the ${family} family`));

/**
 * THE list of endpoint families: each is one Lambda in AWS (`Secrets-<family>`, and `Job-<family>` for an engine with
 * its own job) and bundles only its backends, each loaded when the function first needs it (a chunk of its own, so a
 * function's cold start loads its family's code and no other). `system` holds `sys/`, `auth/token/` and `identity/`;
 * an engine family holds its engine. Adding an engine is its folder (`engines/<name>/`, whose backend declares its
 * leases, periodic work and deployment) and one line here: the functions, routes, schedules, permissions and local
 * timers are derived from it (`families.ts` loads it for whoever needs every backend at once).
 */
export const familyList = {
  system: async (): Promise<Backend[]> => {
    const [sys, token, identity] =
      process.env.KEYHAVEN_BUNDLED_FAMILY === undefined || process.env.KEYHAVEN_BUNDLED_FAMILY === 'system'
        ? await Promise.all([
            import('./sys/system-backend.ts'),
            import('./auth/token/token-backend.ts'),
            import('./identity-paths/identity-backend.ts'),
          ])
        : await notBundled('system');
    return [sys.systemBackend, token.tokenBackend, identity.identityBackend];
  },
  kv: async (): Promise<Backend[]> =>
    process.env.KEYHAVEN_BUNDLED_FAMILY === undefined || process.env.KEYHAVEN_BUNDLED_FAMILY === 'kv'
      ? [(await import('./engines/kv/kv-backend.ts')).kvBackend]
      : notBundled('kv'),
  jwt: async (): Promise<Backend[]> => {
    const jwt =
      process.env.KEYHAVEN_BUNDLED_FAMILY === undefined || process.env.KEYHAVEN_BUNDLED_FAMILY === 'jwt'
        ? await import('./auth/jwt/jwt-backend.ts')
        : await notBundled('jwt');
    return [jwt.jwtBackend, jwt.oidcBackend];
  },
  mesh: async (): Promise<Backend[]> =>
    process.env.KEYHAVEN_BUNDLED_FAMILY === undefined || process.env.KEYHAVEN_BUNDLED_FAMILY === 'mesh'
      ? [(await import('./engines/mesh/mesh-backend.ts')).meshBackend]
      : notBundled('mesh'),
  ldap: async (): Promise<Backend[]> =>
    process.env.KEYHAVEN_BUNDLED_FAMILY === undefined || process.env.KEYHAVEN_BUNDLED_FAMILY === 'ldap'
      ? [(await import('./engines/ldap/ldap-backend.ts')).ldapBackend]
      : notBundled('ldap'),
  cloud: async (): Promise<Backend[]> =>
    process.env.KEYHAVEN_BUNDLED_FAMILY === undefined || process.env.KEYHAVEN_BUNDLED_FAMILY === 'cloud'
      ? [(await import('./engines/cloud/cloud-backend.ts')).cloudBackend]
      : notBundled('cloud'),
};

export type SecretsFamily = keyof typeof familyList;

export const allSecretsFamilies = Object.keys(familyList) as SecretsFamily[];

/** The family's backends, loaded on first call. */
export const loadFamily = (family: SecretsFamily): Promise<Backend[]> => familyList[family]();
