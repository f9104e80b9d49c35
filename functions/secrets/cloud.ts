import { secretsHandler } from './app.ts';

/** Mounts of type `cloud` (the cloud credentials engine). */
export const handler = secretsHandler(['cloud']);
