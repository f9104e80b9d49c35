import { secretsHandler } from './app.ts';

/** Mounts of type `ldap` (the directory engine). */
export const handler = secretsHandler(['ldap']);
