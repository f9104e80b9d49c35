import type { Backend } from './framework/backend.ts';

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
    const [sys, token, identity] = await Promise.all([
      import('./sys/system-backend.ts'),
      import('./auth/token/token-backend.ts'),
      import('./identity-paths/identity-backend.ts'),
    ]);
    return [sys.systemBackend, token.tokenBackend, identity.identityBackend];
  },
  kv: async (): Promise<Backend[]> => [(await import('./engines/kv/kv-backend.ts')).kvBackend],
  jwt: async (): Promise<Backend[]> => {
    const jwt = await import('./auth/jwt/jwt-backend.ts');
    return [jwt.jwtBackend, jwt.oidcBackend];
  },
  mesh: async (): Promise<Backend[]> => [(await import('./engines/mesh/mesh-backend.ts')).meshBackend],
  ldap: async (): Promise<Backend[]> => [(await import('./engines/ldap/ldap-backend.ts')).ldapBackend],
  cloud: async (): Promise<Backend[]> => [(await import('./engines/cloud/cloud-backend.ts')).cloudBackend],
};

export type SecretsFamily = keyof typeof familyList;

export const allSecretsFamilies = Object.keys(familyList) as SecretsFamily[];

/** The family's backends, loaded on first call. */
export const loadFamily = (family: SecretsFamily): Promise<Backend[]> => familyList[family]();
