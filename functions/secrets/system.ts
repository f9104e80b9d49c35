import { identityBackend } from '@keyhaven/core/secrets/identity/identity-backend.ts';
import { systemBackend } from '@keyhaven/core/secrets/sys/system-backend.ts';
import { tokenBackend } from '@keyhaven/core/secrets/tokens/token-backend.ts';
import { secretsHandler } from './app.ts';

/** `sys/*`, `auth/token/*` and `identity/*`. */
export const handler = secretsHandler([systemBackend, tokenBackend, identityBackend]);
