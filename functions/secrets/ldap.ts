import { ldapBackend } from '@keyhaven/core/secrets/engines/ldap/ldap-backend.ts';
import { secretsHandler } from './app.ts';

/** Mounts of type `ldap` (the directory engine). */
export const handler = secretsHandler([ldapBackend]);
