import { lambdaStreamHandler } from '@keyhaven/core/http/lambda-handler.ts';
import { schedulerApp } from './app.ts';

/**
 * `GET /v1/event/stream` on a Function URL with `InvokeMode: RESPONSE_STREAM`. A stream ends a little before
 * the function's time limit (`KEYHAVEN_STREAM_LIMIT_MS`, default 14 minutes for a 15-minute function); the
 * client reconnects with `?index=` set to the last index it received and gets no duplicates.
 */
export const handler = lambdaStreamHandler(
  schedulerApp({ streamLimitMs: Number(process.env.KEYHAVEN_STREAM_LIMIT_MS ?? 14 * 60_000) }),
);
