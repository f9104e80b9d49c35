import { jwtBackend, oidcBackend } from '@keyhaven/core/secrets/auth/jwt/jwt-backend.ts';
import { secretsHandler } from './app.ts';

/** Auth mounts of type `jwt` and `oidc`. */
export const handler = secretsHandler([jwtBackend, oidcBackend]);
