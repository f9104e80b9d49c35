import type { Backend } from '@keyhaven/core/http/backend.ts';
import { createSecretsApp } from '@keyhaven/core/http/secrets-app.ts';
import { coreFromEnvironment } from '@keyhaven/core/runtime.ts';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { handle, type LambdaContext, type LambdaEvent } from 'hono/aws-lambda';

/**
 * A direct invocation by the system function (never API Gateway: only the system function may invoke this one):
 * revoke a lease of this family's engine now, as `sys/leases/revoke` promises. See `revokeElsewhere` in runtime.ts.
 */
export interface RevokeLeaseEvent {
  keyhaven: 'revoke-lease';
  leaseId: string;
}

/**
 * The Lambda handler for one endpoint family: the same app `npm start` serves, with only this family's
 * backends. Each entry imports its backends by path (not through the core's index) so its bundle holds
 * no other family's code.
 */
export function secretsHandler(backends: Backend[]) {
  const core = coreFromEnvironment(backends);
  const app = createSecretsApp({
    core,
    clientIp: (env) => (env as { event?: APIGatewayProxyEventV2 }).event?.requestContext?.http?.sourceIp ?? '',
  });
  const http = handle(app);
  return async (event: LambdaEvent | RevokeLeaseEvent, context?: LambdaContext) => {
    if (isRevokeLease(event)) {
      // A failure is thrown: the caller sees the function's error and answers 502, the lease stays queued.
      await (await core()).leases.revoke(event.leaseId);
      return { revoked: event.leaseId };
    }
    return http(event, context);
  };
}

const isRevokeLease = (event: LambdaEvent | RevokeLeaseEvent): event is RevokeLeaseEvent =>
  (event as Partial<RevokeLeaseEvent>).keyhaven === 'revoke-lease';
