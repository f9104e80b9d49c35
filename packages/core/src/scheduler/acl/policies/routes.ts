/** ACL policies over HTTP: `/v1/acl/policies`, `/v1/acl/policy/:name`. */
import * as z from 'zod/mini';
import { badRequest, notFound } from '../../../lib/errors.ts';
import { permissionDenied } from '../../http/nomad.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import { policyBody, policyName, policyStub, writtenPolicyName } from './model.ts';

export const policyRoutes: SchedulerRoute[] = [
  route({
    method: 'GET',
    path: '/v1/acl/policies',
    summary: 'List the ACL policies (a management token sees all, another token the policies it holds).',
    access: 'token',
    query: { prefix: z.optional(z.string()).check(z.describe('Only policies whose name starts with this prefix.')) },
    blocking: ['acl_policy'],
    returns: 'The policies, without their rules.',
    handler: async ({ scheduler, caller, query }) => {
      const who = await caller();
      const prefix = query.prefix ?? '';
      return {
        read: async () => {
          const mine = who.management ? undefined : new Set(who.policyNames);
          return (await scheduler.policies.list())
            .filter((policy) => policy.Name.startsWith(prefix) && (!mine || mine.has(policy.Name)))
            .map(policyStub);
        },
      };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/acl/policy/:name',
    summary: 'Read an ACL policy (a token that is not a management token reads only the policies it holds).',
    access: 'token',
    params: { name: policyName },
    blocking: ['acl_policy'],
    returns: 'The policy with its rules.',
    handler: async ({ scheduler, caller, params: { name } }) => {
      const who = await caller();
      if (!who.management && !who.policyNames.includes(name)) throw permissionDenied();
      return {
        read: async () => {
          const policy = await scheduler.policies.get(name);
          if (!policy) throw notFound('ACL policy not found');
          return policy;
        },
      };
    },
  }),
  route({
    method: ['POST', 'PUT'],
    path: '/v1/acl/policy/:name',
    summary: 'Create or update an ACL policy.',
    access: 'management',
    params: { name: writtenPolicyName },
    body: policyBody,
    returns: 'An empty body; the index headers carry the write index.',
    handler: async ({ scheduler, params: { name }, body }) => {
      // The name is checked, before it reaches a key, with the rest of the policy (Nomad's validation message).
      if (body.Name && body.Name !== name) throw badRequest('Policy name does not match request path');
      const policy = await scheduler.policies.upsert({
        Name: name,
        Description: body.Description ?? '',
        Rules: body.Rules ?? '',
      });
      return { empty: true, index: policy.ModifyIndex };
    },
  }),
  route({
    method: 'DELETE',
    path: '/v1/acl/policy/:name',
    summary: 'Delete an ACL policy (deleting a missing policy is not an error).',
    access: 'management',
    params: { name: policyName },
    returns: 'An empty body; the index headers carry the write index.',
    handler: async ({ scheduler, params: { name } }) => {
      return {
        empty: true,
        index: (await scheduler.policies.delete(name)) ?? (await scheduler.state.tableIndex(['acl_policy'])),
      };
    },
  }),
];
