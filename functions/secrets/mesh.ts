import { meshBackend } from '@keyhaven/core/secrets/engines/mesh/mesh-backend.ts';
import { secretsHandler } from './app.ts';

/** Mounts of type `mesh` (the service-mesh token engine). */
export const handler = secretsHandler([meshBackend]);
