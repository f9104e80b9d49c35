import { secretsHandler } from './app.ts';

/** Mounts of type `mesh`. */
export const handler = secretsHandler(['mesh']);
