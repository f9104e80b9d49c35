import { trustedProxiesFromEnvironment } from '../lib/client-ip.ts';
import type { HttpFront } from '../front/exchange.ts';
import { lambdaHandler } from './lambda-handler.ts';

/**
 * The secrets service on API Gateway's HTTP API (payload version 2.0): the shared Lambda adapter
 * (`lambda-handler.ts`: the event straight into the adapter-neutral request, no web objects) over `secretsFront`.
 */
export function secretsLambda(
  front: HttpFront,
  trustedProxies: readonly string[] = trustedProxiesFromEnvironment(process.env),
) {
  return lambdaHandler(front, trustedProxies);
}
