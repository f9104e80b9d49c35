import { cloudBackend } from '@keyhaven/core/secrets/engines/cloud/cloud-backend.ts';
import { secretsHandler } from './app.ts';

/** Mounts of type `cloud` (the cloud credentials engine). */
export const handler = secretsHandler([cloudBackend]);
