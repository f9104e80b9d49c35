/** An ACL binding rule: which logins of an auth method get a role, a policy or management (Nomad's `ACLBindingRule`). */
import * as z from 'zod/mini';
import { BexprSyntaxError, bexprReady, parseBexpr } from '../../../lib/bexpr.ts';
import { badRequest, notFound } from '../../../lib/errors.ts';
import type { PendingEvent } from '../../state.ts';
import type { AclAuthMethod } from '../auth-methods/model.ts';
import { shown, uuidParameter } from '../identifiers.ts';
import { templateNames } from '../interpolate.ts';

export interface AclBindingRule {
  ID: string;
  Description: string;
  AuthMethod: string;
  Selector: string;
  BindType: 'role' | 'policy' | 'management';
  BindName: string;
  Hash: string;
  CreateTime: string;
  ModifyTime: string;
  CreateIndex: number;
  ModifyIndex: number;
}

export type BindingRuleContent = Pick<
  AclBindingRule,
  'Description' | 'AuthMethod' | 'Selector' | 'BindType' | 'BindName'
>;

const bindTypes = new Set(['role', 'policy', 'management']);

export const bindingRuleBody = z.object({
  ID: z
    .optional(z.string())
    .check(z.describe('The rule ID: absent when creating a rule, equal to the ID in the path when updating one.')),
  Description: z
    .optional(z.string())
    .check(z.describe('A human-readable description of the rule (at most 256 characters).')),
  AuthMethod: z.optional(z.string()).check(z.describe('The auth method the rule belongs to; it cannot change.')),
  Selector: z
    .optional(z.string())
    .check(
      z.describe(
        'A boolean expression over the mapped claims (`value.<name>`, `list.<name>`); empty matches every login.',
      ),
    ),
  BindType: z.optional(z.string()).check(z.describe('What a matching login gets: `role`, `policy` or `management`.')),
  BindName: z.optional(z.string()).check(
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Nomad's own interpolation syntax, not a JS template
    z.describe('The role or policy name, which may use `${value.<name>}` claim variables; empty for management.'),
  ),
});
export type BindingRuleBody = z.infer<typeof bindingRuleBody>;

export const bindingRuleId = uuidParameter('ACL binding rule ID', 'The binding rule ID (a UUID).');

/**
 * The rule's content after merging `body` over `existing`, validated (400 naming each problem); `method` finds the
 * auth method the rule names, whose claim mappings its bind name may use.
 */
export async function validateBindingRule(
  body: BindingRuleBody,
  id: string | undefined,
  existing: AclBindingRule | undefined,
  method: (name: string) => Promise<AclAuthMethod | undefined>,
): Promise<BindingRuleContent> {
  if (id && !existing) throw notFound('ACL binding rule not found');
  if (existing && body.AuthMethod && body.AuthMethod !== existing.AuthMethod) {
    throw badRequest('cannot update the auth method of a binding rule');
  }
  const bindType = body.BindType || existing?.BindType || '';
  const content = {
    Description: body.Description || existing?.Description || '',
    AuthMethod: existing?.AuthMethod ?? body.AuthMethod ?? '',
    Selector: body.Selector || existing?.Selector || '',
    BindType: bindType as AclBindingRule['BindType'],
    // Switching a rule to management drops its stored bind name, which management must not have.
    BindName: body.BindName || (bindType === 'management' ? '' : existing?.BindName) || '',
  };
  const problems: string[] = [];
  if (!content.AuthMethod) problems.push('auth method name is missing');
  if (!bindTypes.has(content.BindType)) problems.push(`invalid bind type '${content.BindType}'`);
  if (content.BindType === 'management' && content.BindName)
    problems.push('bind name must be empty when the bind type is management');
  if ((content.BindType === 'role' || content.BindType === 'policy') && !content.BindName)
    problems.push('bind name is missing');
  if (content.Description.length > 256) problems.push('description longer than 256');
  if (content.Selector) {
    await bexprReady(content.Selector);
    try {
      parseBexpr(content.Selector);
    } catch (error) {
      if (!(error instanceof BexprSyntaxError)) throw error;
      problems.push(`selector is invalid: ${error.message}`);
    }
  }
  if (problems.length > 0) throw badRequest(`ACL binding rule validation failed: ${problems.join('; ')}`);
  const found = await method(content.AuthMethod);
  if (!found) throw badRequest(`ACL auth-method ${shown(content.AuthMethod)} not found`);
  if (content.BindName) {
    // Only value claims can be interpolated: Nomad's binder gives list claims to selectors alone, so a bind name
    // with `${list.x}` would fail every login it matched. Refused here, where the mistake is made.
    const known = new Set(Object.values(found.Config.ClaimMappings ?? {}).map((name) => `value.${name}`));
    let names: string[];
    try {
      names = templateNames(content.BindName);
    } catch (error) {
      throw badRequest(`bind name is invalid: ${(error as Error).message}`);
    }
    const unknown = names.filter((name) => !known.has(name));
    if (unknown.length > 0)
      throw badRequest(`bind name is invalid: unknown variable ${unknown.map((name) => `"${name}"`).join(', ')}`);
  }
  return content;
}

export const pickContent = (rule: AclBindingRule) => ({
  Description: rule.Description,
  AuthMethod: rule.AuthMethod,
  Selector: rule.Selector,
  BindType: rule.BindType,
  BindName: rule.BindName,
});

/** Read, create and update results carry every field except `Hash`. */
export function withoutHash(rule: AclBindingRule): Omit<AclBindingRule, 'Hash'> {
  const { Hash: _hash, ...rest } = rule;
  return rest;
}

export const bindingRuleStub = (rule: AclBindingRule) => ({
  AuthMethod: rule.AuthMethod,
  CreateIndex: rule.CreateIndex,
  Description: rule.Description,
  Hash: rule.Hash,
  ID: rule.ID,
  ModifyIndex: rule.ModifyIndex,
});

export function bindingRuleEvent(type: string, rule: AclBindingRule): PendingEvent {
  return {
    Topic: 'ACLBindingRule',
    Type: type,
    Key: rule.ID,
    Namespace: '',
    FilterKeys: [rule.AuthMethod],
    Payload: { ACLBindingRule: withoutHash(rule) },
  };
}
