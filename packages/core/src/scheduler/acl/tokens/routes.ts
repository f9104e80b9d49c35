/**
 * ACL tokens over HTTP: `/v1/acl/bootstrap`, `/v1/acl/tokens`, `/v1/acl/token`, `/v1/acl/token/:accessor`,
 * `/v1/acl/token/self`.
 */
import * as z from 'zod/mini';
import { badRequest, notFound } from '../../../lib/errors.ts';
import { permissionDenied } from '../../http/nomad.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import { type AclToken, accessorId, bootstrapBody, tokenBody, tokenStub, view } from './model.ts';

export const tokenRoutes: SchedulerRoute[] = [
  route({
    method: 'POST',
    path: '/v1/acl/bootstrap',
    summary: 'Create the first management token; once only.',
    access: 'anyone',
    body: bootstrapBody,
    returns: 'The bootstrap token with its secret ID (shown this once).',
    handler: async ({ scheduler, body }) => {
      const token = await scheduler.tokens.bootstrap(body.BootstrapSecret);
      return { json: token, index: token.CreateIndex };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/acl/tokens',
    summary: 'List the ACL tokens that have not expired, oldest first.',
    access: 'management',
    query: {
      prefix: z.optional(z.string()).check(z.describe('Only tokens whose accessor ID starts with this prefix.')),
    },
    blocking: ['acl_token'],
    returns: 'The tokens, without their secrets.',
    handler: async ({ scheduler, query }) => {
      const prefix = query.prefix ?? '';
      return {
        read: async () =>
          (await scheduler.tokens.list())
            .filter((token) => token.AccessorID.startsWith(prefix) && !scheduler.tokens.expired(token))
            .sort((a, b) => a.CreateIndex - b.CreateIndex)
            .map(tokenStub),
      };
    },
  }),
  route({
    method: 'POST',
    path: '/v1/acl/token',
    summary: 'Create an ACL token.',
    access: 'management',
    body: tokenBody,
    returns: 'The token with its secret ID (shown this once).',
    handler: async ({ scheduler, body }) => {
      if (body.AccessorID) throw badRequest('Specifying AccessorID is not allowed when creating a token');
      const token = await scheduler.tokens.mint(body);
      return { json: token, index: token.ModifyIndex };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/acl/token/self',
    summary: 'Read the token the request is made with.',
    access: 'token',
    blocking: ['acl_token'],
    returns: 'The token, without its secret.',
    handler: async ({ caller }) => {
      const { token } = await caller();
      if (!token) throw notFound('ACL token not found');
      return { read: async () => view(token as AclToken) };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/acl/token/:accessor',
    summary: 'Read an ACL token (a token that is not a management token reads only itself).',
    access: 'token',
    params: { accessor: accessorId },
    blocking: ['acl_token'],
    returns: 'The token, without its secret.',
    handler: async ({ scheduler, caller, params: { accessor } }) => {
      const who = await caller();
      if (!who.management && who.token?.AccessorID !== accessor) throw permissionDenied();
      return {
        read: async () => {
          const token = await scheduler.tokens.get(accessor);
          if (!token || scheduler.tokens.expired(token)) throw notFound('ACL token not found');
          return view(token);
        },
      };
    },
  }),
  route({
    method: ['POST', 'PUT'],
    path: '/v1/acl/token/:accessor',
    summary: 'Update an ACL token (its name, type, policies and roles; not its expiration or locality).',
    access: 'management',
    params: { accessor: accessorId },
    body: tokenBody,
    returns: 'The updated token, without its secret.',
    handler: async ({ scheduler, params: { accessor }, body }) => {
      if (body.AccessorID && body.AccessorID !== accessor)
        throw badRequest('Token accessor ID does not match request path');
      const token = await scheduler.tokens.update(accessor, body);
      return { json: token, index: token.ModifyIndex };
    },
  }),
  route({
    method: 'DELETE',
    path: '/v1/acl/token/:accessor',
    summary: 'Delete an ACL token.',
    access: 'management',
    params: { accessor: accessorId },
    returns: 'An empty body; the index headers carry the write index.',
    handler: async ({ scheduler, params }) => ({ empty: true, index: await scheduler.tokens.delete(params.accessor) }),
  }),
];
