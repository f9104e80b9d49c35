/**
 * ACL binding rules over HTTP: `/v1/acl/binding-rules`, `/v1/acl/binding-rule`, `/v1/acl/binding-rule/:id`, and the
 * dry run `/v1/acl/binding-rules/evaluate` (`evaluate.ts`: a login's binding without the login).
 */
import { badRequest, notFound } from '../../../lib/errors.ts';
import { route, type SchedulerRoute } from '../../http/route.ts';
import { mapClaims } from '../login.ts';
import { bindClaims } from './bind.ts';
import { dryRunAnswer, evaluateBody, evaluateInput } from './evaluate.ts';
import { bindingRuleBody, bindingRuleId, bindingRuleStub, withoutHash } from './model.ts';

export const bindingRuleRoutes: SchedulerRoute[] = [
  route({
    method: 'GET',
    path: '/v1/acl/binding-rules',
    summary: 'List the ACL binding rules, oldest first.',
    access: 'management',
    blocking: ['acl_binding_rule'],
    returns: 'The rules: ID, auth method and description.',
    handler: async ({ scheduler }) => ({
      read: async () => (await scheduler.bindingRules.list()).map(bindingRuleStub),
    }),
  }),
  route({
    method: 'POST',
    path: '/v1/acl/binding-rule',
    summary: 'Create an ACL binding rule.',
    access: 'management',
    body: bindingRuleBody,
    returns: 'The rule, with its new ID.',
    handler: async ({ scheduler, body }) => {
      if (body.ID) throw badRequest('ACL binding rule ID must not be set when creating a rule');
      const rule = await scheduler.bindingRules.upsert(body);
      return { json: withoutHash(rule), index: rule.ModifyIndex };
    },
  }),
  route({
    method: 'GET',
    path: '/v1/acl/binding-rule/:id',
    summary: 'Read an ACL binding rule.',
    access: 'management',
    params: { id: bindingRuleId },
    blocking: ['acl_binding_rule'],
    returns: 'The rule.',
    handler: async ({ scheduler, params }) => ({
      read: async () => {
        const rule = await scheduler.bindingRules.get(params.id);
        if (!rule) throw notFound('ACL binding rule not found');
        return withoutHash(rule);
      },
    }),
  }),
  route({
    method: ['POST', 'PUT'],
    path: '/v1/acl/binding-rule/:id',
    summary: 'Update an ACL binding rule (empty fields keep their values; the auth method cannot change).',
    access: 'management',
    params: { id: bindingRuleId },
    body: bindingRuleBody,
    returns: 'The updated rule.',
    handler: async ({ scheduler, params: { id }, body }) => {
      if (body.ID && body.ID !== id) throw badRequest('ACL binding rule ID in URL must match ID in body');
      const rule = await scheduler.bindingRules.upsert(body, id);
      return { json: withoutHash(rule), index: rule.ModifyIndex };
    },
  }),
  route({
    method: 'DELETE',
    path: '/v1/acl/binding-rule/:id',
    summary: 'Delete an ACL binding rule.',
    access: 'management',
    params: { id: bindingRuleId },
    returns: 'An empty body; the index headers carry the write index.',
    handler: async ({ scheduler, params }) => ({ empty: true, index: await scheduler.bindingRules.delete(params.id) }),
  }),
  route({
    method: 'POST',
    path: '/v1/acl/binding-rules/evaluate',
    summary: "Evaluate an auth method's binding rules against a set of claims, as a login would, without logging in.",
    description:
      'A dry run for debugging selectors: the claims are not verified, no token is minted and nothing is written. The claims are ' +
      "mapped through the method's ClaimMappings and ListClaimMappings and the rules evaluated by the login's own code.",
    access: 'management',
    body: evaluateBody,
    returns:
      'AuthMethodName, AuthMethodType, the mapped claims (Variables: `value`, `list`), Rules (ID, Description, Selector, Matched, Combine, ' +
      'Terms [{Text, Matched, Error}], Error, BindType, BindName interpolated, RoleMissing, BindNameError), Roles [{ID, Name}], Policies, ' +
      'Management, TokenName, and LoginError when a login with these claims would fail.',
    handler: async ({ scheduler, body }) => {
      const { name, claims } = evaluateInput(body);
      const method = await scheduler.authMethods.get(name);
      if (!method) throw badRequest(`auth method ${name} not found`);
      const variables = mapClaims(method, claims);
      return { json: dryRunAnswer(method, variables, await bindClaims(scheduler, method, variables, true)) };
    },
  }),
];
