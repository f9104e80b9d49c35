import { secretsHandler } from './app.ts';

/** Mounts of type `kv`. */
export const handler = secretsHandler(['kv']);
