/** ACL auth methods over HTTP: `/v1/acl/auth-methods`, `/v1/acl/auth-method`, `/v1/acl/auth-method/:name`. */
import { badRequest, notFound } from '../../../lib/errors.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import { authMethodBody, authMethodName, authMethodStub, withoutSecret } from './model.ts';

export const authMethodRoutes: SchedulerRoute[] = [
  route({
    method: 'GET',
    path: '/v1/acl/auth-methods',
    summary: 'List the ACL auth methods (anyone may: a login screen needs them before the user has a token).',
    access: 'anyone',
    blocking: ['acl_auth_method'],
    returns: 'The methods: name, type and whether each is the default.',
    handler: async ({ scheduler }) => ({ read: async () => (await scheduler.authMethods.list()).map(authMethodStub) }),
  }),
  route({
    method: 'POST',
    path: '/v1/acl/auth-method',
    summary: 'Create an ACL auth method.',
    access: 'management',
    body: authMethodBody,
    returns: 'The method, without its OIDC client secret.',
    handler: async ({ scheduler, body }) => {
      const method = await scheduler.authMethods.upsert(body, 'create');
      return { json: withoutSecret(method), index: method.ModifyIndex };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/acl/auth-method/:name',
    summary: 'Read an ACL auth method.',
    access: 'management',
    params: { name: authMethodName },
    blocking: ['acl_auth_method'],
    returns: 'The method, without its OIDC client secret.',
    handler: async ({ scheduler, params }) => ({
      read: async () => {
        const method = await scheduler.authMethods.get(params.name);
        if (!method) throw notFound('ACL auth-method not found');
        return withoutSecret(method);
      },
    }),
  }),
  route({
    method: ['POST', 'PUT'],
    path: '/v1/acl/auth-method/:name',
    summary: 'Update an ACL auth method.',
    access: 'management',
    params: { name: authMethodName },
    body: authMethodBody,
    returns: 'The updated method, without its OIDC client secret.',
    handler: async ({ scheduler, params: { name }, body }) => {
      if (body.Name && body.Name !== name) throw badRequest('ACL auth-method name in URL must match name in body');
      const method = await scheduler.authMethods.upsert({ ...body, Name: name }, 'update');
      return { json: withoutSecret(method), index: method.ModifyIndex };
    },
  }),
  route({
    method: 'DELETE',
    path: '/v1/acl/auth-method/:name',
    summary: 'Delete an ACL auth method and its binding rules.',
    access: 'management',
    params: { name: authMethodName },
    returns: 'An empty body; the index headers carry the write index.',
    handler: async ({ scheduler, params }) => ({
      empty: true,
      index: await scheduler.bindingRules.deleteAuthMethod(params.name),
    }),
  }),
];
