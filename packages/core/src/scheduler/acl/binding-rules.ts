/**
 * ACL binding rules: `/v1/acl/binding-rules`, `/v1/acl/binding-rule`, `/v1/acl/binding-rule/:rule_id`.
 * The selector is compiled at write and refused, with its position, when invalid.
 */
import type { Context, Hono } from 'hono';
import * as z from 'zod';
import { BexprSyntaxError, parseBexpr } from '../../lib/bexpr.ts';
import { uuid } from '../../lib/random.ts';
import type { TransactItem } from '../../storage/store.ts';
import { badRequest, blockingQuery, notFound, readBody, setIndexHeaders } from '../http/nomad.ts';
import type { SchedulerEnv } from '../scheduler.ts';
import { type PendingEvent, type SchedulerState, WriteConditionFailed } from '../state.ts';
import type { AclAuthMethods } from './auth-methods.ts';
import { contentHash, rfc3339, sameContent, withoutKeys } from './common.ts';
import { requireUuid, shown, validUuid } from './identifiers.ts';
import { templateNames } from './interpolate.ts';

export const BINDING_RULE_PK = 'sched#binding-rule';

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

const bindTypes = new Set(['role', 'policy', 'management']);

export const bindingRuleBody = z.object({
  ID: z.string().optional(),
  Description: z.string().optional(),
  AuthMethod: z.string().optional(),
  Selector: z.string().optional(),
  BindType: z.string().optional(),
  BindName: z.string().optional(),
});
type BindingRuleBody = z.infer<typeof bindingRuleBody>;

export class AclBindingRules {
  constructor(
    private readonly state: SchedulerState,
    private readonly authMethods: AclAuthMethods,
  ) {}

  /** The rule of that ID; an ID that is not a UUID finds none. */
  async get(id: string): Promise<AclBindingRule | undefined> {
    if (!validUuid.test(id)) return undefined;
    return withoutKeys<AclBindingRule>(await this.state.store.get(BINDING_RULE_PK, id));
  }

  async list(): Promise<AclBindingRule[]> {
    return (await this.state.store.prefix(BINDING_RULE_PK, ''))
      .map((item) => withoutKeys<AclBindingRule>(item) as AclBindingRule)
      .sort((a, b) => a.CreateIndex - b.CreateIndex);
  }

  /**
   * Creates a rule (no `id`), or updates one: empty fields keep their stored values; the auth method cannot change.
   * The reads are made in the write's plan, so an identical change is made (and published) once.
   */
  async upsert(body: BindingRuleBody, id?: string): Promise<AclBindingRule> {
    const ruleId = id ?? uuid();
    const now = rfc3339(this.state.clock.now());
    let result: AclBindingRule | undefined;
    try {
      await this.state.commit(async (index) => {
        const existing = id ? await this.get(id) : undefined;
        const content = await this.checked(body, id, existing);
        if (existing && sameContent(content, pick(existing))) {
          result = existing;
          return undefined;
        }
        const rule: AclBindingRule = {
          ID: ruleId,
          ...content,
          Hash: contentHash(content),
          CreateTime: existing?.CreateTime ?? now,
          ModifyTime: now,
          CreateIndex: existing?.CreateIndex ?? index,
          ModifyIndex: index,
        };
        result = rule;
        return {
          items: [
            {
              Put: {
                Item: { pk: BINDING_RULE_PK, sk: ruleId, ...rule },
                ConditionExpression: existing ? 'ModifyIndex = :seen' : 'attribute_not_exists(pk)',
                ...(existing ? { ExpressionAttributeValues: { ':seen': existing.ModifyIndex } } : {}),
              },
            },
            // The auth method must still exist when the rule is written.
            { ConditionCheck: { Key: { pk: 'sched#auth-method', sk: content.AuthMethod }, ConditionExpression: 'attribute_exists(pk)' } },
          ],
          tables: ['acl_binding_rule'],
          events: [this.event('ACLBindingRuleUpserted', rule)],
        };
      });
    } catch (error) {
      if (!(error instanceof WriteConditionFailed)) throw error;
      if (error.failed.includes(1)) throw badRequest(`ACL auth-method ${shown(body.AuthMethod ?? '')} not found`);
      throw badRequest('the binding rule was modified concurrently; retry');
    }
    return result as AclBindingRule;
  }

  /** The rule's content after merging `body` over `existing`, validated (400 naming each problem). */
  private async checked(
    body: BindingRuleBody,
    id: string | undefined,
    existing: AclBindingRule | undefined,
  ): Promise<Pick<AclBindingRule, 'Description' | 'AuthMethod' | 'Selector' | 'BindType' | 'BindName'>> {
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
    if (content.BindType === 'management' && content.BindName) problems.push('bind name must be empty when the bind type is management');
    if ((content.BindType === 'role' || content.BindType === 'policy') && !content.BindName) problems.push('bind name is missing');
    if (content.Description.length > 256) problems.push('description longer than 256');
    if (content.Selector) {
      try {
        parseBexpr(content.Selector);
      } catch (error) {
        if (!(error instanceof BexprSyntaxError)) throw error;
        problems.push(`selector is invalid: ${error.message}`);
      }
    }
    if (problems.length > 0) throw badRequest(`ACL binding rule validation failed: ${problems.join('; ')}`);
    const method = await this.authMethods.get(content.AuthMethod);
    if (!method) throw badRequest(`ACL auth-method ${shown(content.AuthMethod)} not found`);
    if (content.BindName) {
      // Only value claims can be interpolated: Nomad's binder gives list claims to selectors alone, so a bind name
      // with `${list.x}` would fail every login it matched. Refused here, where the mistake is made.
      const known = new Set(Object.values(method.Config.ClaimMappings ?? {}).map((name) => `value.${name}`));
      let names: string[];
      try {
        names = templateNames(content.BindName);
      } catch (error) {
        throw badRequest(`bind name is invalid: ${(error as Error).message}`);
      }
      const unknown = names.filter((name) => !known.has(name));
      if (unknown.length > 0) throw badRequest(`bind name is invalid: unknown variable ${unknown.map((name) => `"${name}"`).join(', ')}`);
    }
    return content;
  }

  /** Deletes a rule; 404 when there is none, also for each loser of concurrent deletes (one deletion, one event). */
  async delete(id: string): Promise<number> {
    return this.state.commit(async () => {
      const existing = await this.get(id);
      if (!existing) throw notFound('ACL binding rule not found');
      return {
        items: [{ Delete: { Key: { pk: BINDING_RULE_PK, sk: id }, ConditionExpression: 'attribute_exists(pk)' } }],
        tables: ['acl_binding_rule'],
        events: [this.event('ACLBindingRuleDeleted', existing)],
      };
    });
  }

  deleteItem(id: string): TransactItem {
    return { Delete: { Key: { pk: BINDING_RULE_PK, sk: id } } };
  }

  event(type: string, rule: AclBindingRule): PendingEvent {
    return { Topic: 'ACLBindingRule', Type: type, Key: rule.ID, Namespace: '', FilterKeys: [rule.AuthMethod], Payload: { ACLBindingRule: withoutHash(rule) } };
  }
}

const pick = (rule: AclBindingRule) => ({
  Description: rule.Description,
  AuthMethod: rule.AuthMethod,
  Selector: rule.Selector,
  BindType: rule.BindType,
  BindName: rule.BindName,
});

/** Read, create and update results carry every field except `Hash`. */
function withoutHash(rule: AclBindingRule): Omit<AclBindingRule, 'Hash'> {
  const { Hash: _hash, ...rest } = rule;
  return rest;
}

const stub = (rule: AclBindingRule) => ({
  AuthMethod: rule.AuthMethod,
  CreateIndex: rule.CreateIndex,
  Description: rule.Description,
  Hash: rule.Hash,
  ID: rule.ID,
  ModifyIndex: rule.ModifyIndex,
});

export function bindingRuleRoutes(app: Hono<SchedulerEnv>): void {
  app.get('/v1/acl/binding-rules', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    return blockingQuery(c, scheduler.state, ['acl_binding_rule'], async () => (await scheduler.bindingRules.list()).map(stub));
  });

  app.post('/v1/acl/binding-rule', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    const body = await readBody(c, bindingRuleBody);
    if (body.ID) throw badRequest('ACL binding rule ID must not be set when creating a rule');
    const rule = await scheduler.bindingRules.upsert(body);
    setIndexHeaders(c, rule.ModifyIndex);
    return c.json(withoutHash(rule));
  });

  app.get('/v1/acl/binding-rule/:id', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    return blockingQuery(c, scheduler.state, ['acl_binding_rule'], async () => {
      const rule = await scheduler.bindingRules.get(requireUuid(c.req.param('id'), 'ACL binding rule ID'));
      if (!rule) throw notFound('ACL binding rule not found');
      return withoutHash(rule);
    });
  });

  const update = async (c: Context<SchedulerEnv>) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    const id = requireUuid(c.req.param('id') as string, 'ACL binding rule ID');
    const body = await readBody(c, bindingRuleBody);
    if (body.ID && body.ID !== id) throw badRequest('ACL binding rule ID in URL must match ID in body');
    const rule = await scheduler.bindingRules.upsert(body, id);
    setIndexHeaders(c, rule.ModifyIndex);
    return c.json(withoutHash(rule));
  };
  app.post('/v1/acl/binding-rule/:id', update);
  app.put('/v1/acl/binding-rule/:id', update);

  app.delete('/v1/acl/binding-rule/:id', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    setIndexHeaders(c, await scheduler.bindingRules.delete(requireUuid(c.req.param('id'), 'ACL binding rule ID')));
    return c.body(null, 200);
  });
}
