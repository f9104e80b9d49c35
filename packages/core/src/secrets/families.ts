import { jwtBackend, oidcBackend } from './auth/jwt/jwt-backend.ts';
import { tokenBackend } from './auth/token/token-backend.ts';
import { cloudBackend } from './engines/cloud/cloud-backend.ts';
import { kvBackend } from './engines/kv/kv-backend.ts';
import { ldapBackend } from './engines/ldap/ldap-backend.ts';
import { meshBackend } from './engines/mesh/mesh-backend.ts';
import type { Backend } from './framework/backend.ts';
import { identityBackend } from './identity-paths/identity-backend.ts';
import { systemBackend } from './sys/system-backend.ts';

/**
 * Endpoint families: each is one Lambda in AWS and bundles only its backends. `system` holds `sys/` and
 * `auth/token/`; the engine families hold their engine. Locally every family runs in one process.
 */
export const secretsFamilies = {
  system: [systemBackend, tokenBackend, identityBackend],
  kv: [kvBackend],
  jwt: [jwtBackend, oidcBackend],
  mesh: [meshBackend],
  ldap: [ldapBackend],
  cloud: [cloudBackend],
} satisfies Record<string, Backend[]>;

export type SecretsFamily = keyof typeof secretsFamilies;

export const allSecretsFamilies = Object.keys(secretsFamilies) as SecretsFamily[];

export const backendsOf = (families: SecretsFamily[]): Backend[] => families.flatMap((family) => secretsFamilies[family]);
