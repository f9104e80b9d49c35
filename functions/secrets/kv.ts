import { kvBackend } from '@keyhaven/core/secrets/engines/kv/kv-backend.ts';
import { secretsHandler } from './app.ts';

/** Mounts of type `kv`. */
export const handler = secretsHandler([kvBackend]);
