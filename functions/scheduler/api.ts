import { createSchedulerApp } from '@keyhaven/core';
import { handle } from 'hono/aws-lambda';

/** The scheduler service. */
export const handler = handle(createSchedulerApp());
