import { identityBackend } from '@keyhaven/core/secrets/identity-paths/identity-backend.ts';
import { systemBackend } from '@keyhaven/core/secrets/sys/system-backend.ts';
import { tokenBackend } from '@keyhaven/core/secrets/auth/token/token-backend.ts';
import { secretsHandler } from './app.ts';

/** `sys/*`, `auth/token/*` and `identity/*`. */
export const handler = secretsHandler([systemBackend, tokenBackend, identityBackend]);
