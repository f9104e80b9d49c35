import { secretsHandler } from './app.ts';

/** `sys/*` and `auth/token/*`. */
export const handler = secretsHandler(['system']);
