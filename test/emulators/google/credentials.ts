import type { Route } from './model.ts';
import { GoogleError } from './model.ts';
import type { GoogleState } from './state.ts';

/** `POST …/serviceAccounts/:id:generateAccessToken` (IAM Credentials): a short-lived access token for a service account. */
export function credentialRoutes(s: GoogleState): Route[] {
  const { options, findAccount, authenticate, issue } = s;
  return [
    {
      method: 'POST',
      pattern: /^\/iamcredentials\/v1\/projects\/-\/serviceAccounts\/([^/:]+):generateAccessToken$/,
      operation: 'serviceAccounts.generateAccessToken',
      handle: ([, id = ''], body, request) => {
        authenticate(request);
        const { scope, lifetime = '3600s' } = (body ?? {}) as { scope?: string[]; lifetime?: string };
        if (!Array.isArray(scope) || scope.length === 0)
          throw new GoogleError(400, 'INVALID_ARGUMENT', 'Scope required.');
        const seconds = /^\d+(\.\d+)?s$/.test(lifetime) ? Math.floor(Number.parseFloat(lifetime)) : Number.NaN;
        const max = options.lifetimeExtension === false ? 3600 : 43_200;
        if (!Number.isFinite(seconds) || seconds < 1 || seconds > max) {
          throw new GoogleError(
            400,
            'INVALID_ARGUMENT',
            `The lifetime of the access token must be between 1 and ${max} seconds.`,
          );
        }
        const state = findAccount('-', decodeURIComponent(id));
        if (!state) throw new GoogleError(404, 'NOT_FOUND', 'Requested entity was not found.');
        const issued = issue(state.account.email, scope, seconds, 'generateAccessToken');
        return {
          accessToken: issued.token,
          expireTime: new Date(issued.expiresAt).toISOString().replace(/\.\d+Z$/, 'Z'),
        };
      },
    },
  ];
}
