/**
 * The login endpoints as route rows: `POST /v1/acl/login` (a JWT) and the OIDC flow's `POST /v1/acl/oidc/auth-url`
 * and `POST /v1/acl/oidc/complete-auth`; and `POST /v1/acl/logout`, which deletes the caller's token when a login made
 * it (as Consul's logout; Nomad has no self-revocation, so a console signing out had none). The verification and binding are `login.ts` and `oidc.ts`.
 */
import * as z from 'zod/mini';
import { badRequest, permissionDenied } from '../../lib/errors.ts';
import { route, type SchedulerRoute } from '../http/route.ts';
import { requireAuthMethodName } from './identifiers.ts';
import type { StoredToken } from './tokens/model.ts';
import { login } from './login.ts';
import { oidcAuthUrl, oidcCompleteAuth } from './oidc.ts';

const authMethodName = z.optional(z.string()).check(z.describe('The name of the auth method to log in with.'));
const redirectUri = z
  .optional(z.string())
  .check(z.describe("Where the provider sends the browser back to; one of the method's AllowedRedirectURIs."));
const clientNonce = z
  .optional(z.string())
  .check(z.describe('A random value the client keeps and sends again to complete the login.'));

export const loginRoutes: SchedulerRoute[] = [
  route({
    method: 'POST',
    path: '/v1/acl/login',
    summary: "Exchange a JWT for an ACL token, through a JWT auth method's binding rules.",
    access: 'anyone',
    body: z.object({
      AuthMethodName: authMethodName,
      LoginToken: z
        .optional(z.string())
        .check(z.describe("The JWT, verified with the method's keys, issuer and audiences.")),
    }),
    returns: 'The new token with its secret ID (shown this once).',
    handler: async ({ scheduler, body }) => {
      if (!body.AuthMethodName) throw badRequest('missing auth method name');
      if (!body.LoginToken) throw badRequest('missing login token');
      requireAuthMethodName(body.AuthMethodName, 'AuthMethodName');
      const token = await login(scheduler, body.AuthMethodName, body.LoginToken);
      return { json: token, index: token.CreateIndex };
    },
  }),
  route({
    method: 'POST',
    path: '/v1/acl/oidc/auth-url',
    summary: "Start an OIDC login: the provider's authorization URL to send the browser to.",
    access: 'anyone',
    body: z.object({ AuthMethodName: authMethodName, RedirectURI: redirectUri, ClientNonce: clientNonce }),
    returns: '`{"AuthURL": …}`.',
    handler: async ({ scheduler, body }) => ({ json: { AuthURL: await oidcAuthUrl(scheduler, body) } }),
  }),
  route({
    method: 'POST',
    path: '/v1/acl/oidc/complete-auth',
    summary: "Complete an OIDC login with the provider's code: an ACL token, through the method's binding rules.",
    access: 'anyone',
    body: z.object({
      AuthMethodName: authMethodName,
      ClientNonce: clientNonce,
      State: z.optional(z.string()).check(z.describe('The `state` the provider sent back.')),
      Code: z.optional(z.string()).check(z.describe('The authorization code the provider sent back.')),
      RedirectURI: redirectUri,
      Iss: z
        .optional(z.string())
        .check(z.describe('The `iss` of the authorization response (RFC 9207), when the provider sent one.')),
    }),
    returns: 'The new token with its secret ID (shown this once).',
    handler: async ({ scheduler, body }) => {
      const token = await oidcCompleteAuth(scheduler, body);
      return { json: token, index: token.CreateIndex };
    },
  }),
  route({
    method: 'POST',
    path: '/v1/acl/logout',
    summary: 'Delete the token the request is made with, if a login (JWT or OIDC) made it.',
    access: 'token',
    returns: 'An empty body (200). A token not made by a login is refused with 403 and kept.',
    handler: async ({ scheduler, caller }) => {
      const { token } = await caller();
      const stored = token as StoredToken | undefined;
      if (!stored) throw permissionDenied();
      if (!stored.LoginMethod) throw permissionDenied('Permission denied: only a token made by a login can log out');
      const index = await scheduler.tokens.delete(stored.AccessorID);
      return { empty: true, index };
    },
  }),
];
