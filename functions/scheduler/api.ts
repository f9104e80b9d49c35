import { handle } from 'hono/aws-lambda';
import { schedulerApp } from './app.ts';

/** The scheduler service (everything but the event stream, which needs a response stream). */
export const handler = handle(schedulerApp());
