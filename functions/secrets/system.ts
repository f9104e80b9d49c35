import { systemBackend } from '@keyhaven/core/secrets/sys/system-backend.ts';
import { tokenBackend } from '@keyhaven/core/secrets/tokens/token-backend.ts';
import { secretsHandler } from './app.ts';

/** `sys/*` and `auth/token/*`. */
export const handler = secretsHandler([systemBackend, tokenBackend]);
