import { secretsHandler } from './app.ts';

/** Auth mounts of type `jwt` and `oidc`. */
export const handler = secretsHandler(['jwt']);
