import { handle } from 'hono/aws-lambda';
import { schedulerApp } from './app.ts';

/**
 * The scheduler service (everything but the event stream, which needs a response stream). Blocking queries
 * answer within 25 s, before the HTTP API's 30 s integration timeout; clients then ask again with the index.
 */
export const handler = handle(schedulerApp({ maxQueryWaitSeconds: 25 }));
