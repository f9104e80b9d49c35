/**
 * ACL binding rules in the table: one item per rule (`BINDING_RULE_PK`, the ID). A rule belongs to an auth method:
 * it is written only while its method exists, and deleting the method deletes its rules in the same transaction.
 */
import { badRequest, notFound } from '../../../lib/errors.ts';
import { uuid } from '../../../lib/random.ts';
import { BINDING_RULE_PK } from '../../keys.ts';
import { type SchedulerState, WriteConditionFailed } from '../../state.ts';
import type { AclAuthMethods } from '../auth-methods/store.ts';
import { itemKind } from '../../../storage/item-mac.ts';
import { contentHash, rfc3339, sameContent, unchangedSince, withoutKeys } from '../common.ts';
import { shown, validUuid } from '../identifiers.ts';
import {
  type AclBindingRule,
  type BindingRuleBody,
  bindingRuleEvent,
  pickContent,
  validateBindingRule,
} from './model.ts';

/** A binding rule item is authenticated whole (`storage/item-mac.ts`): a forged or moved one does not exist. */
export const bindingRuleKind = itemKind('scheduler-acl-binding-rule', [], { epoch: 'bootstrap' });

export class AclBindingRules {
  constructor(
    private readonly state: SchedulerState,
    private readonly authMethods: AclAuthMethods,
  ) {}

  /** The rule of that ID; an ID that is not a UUID finds none. */
  async get(id: string): Promise<AclBindingRule | undefined> {
    if (!validUuid.test(id)) return undefined;
    return withoutKeys<AclBindingRule>(await this.state.store.getVerified(bindingRuleKind, BINDING_RULE_PK, id));
  }

  async list(): Promise<AclBindingRule[]> {
    return (await this.state.store.list(BINDING_RULE_PK))
      .filter((item) => this.state.store.verified(bindingRuleKind, item))
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
        const content = await validateBindingRule(body, id, existing, (name) => this.authMethods.get(name));
        if (existing && sameContent(content, pickContent(existing))) {
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
              put: this.state.store.signed(bindingRuleKind, { pk: BINDING_RULE_PK, sk: ruleId, ...rule }),
              when: unchangedSince(existing),
            },
            // The auth method must still exist when the rule is written.
            this.authMethods.existsCheck(content.AuthMethod),
          ],
          tables: ['acl_binding_rule'],
          events: [bindingRuleEvent('ACLBindingRuleUpserted', rule)],
        };
      });
    } catch (error) {
      if (!(error instanceof WriteConditionFailed)) throw error;
      if (error.failed.includes(1)) throw badRequest(`ACL auth-method ${shown(body.AuthMethod ?? '')} not found`);
      throw badRequest('the binding rule was modified concurrently; retry');
    }
    return result as AclBindingRule;
  }

  /** Deletes a rule; 404 when there is none, also for each loser of concurrent deletes (one deletion, one event). */
  async delete(id: string): Promise<number> {
    return this.state.commit(async () => {
      const existing = await this.get(id);
      if (!existing) throw notFound('ACL binding rule not found');
      return {
        items: [{ delete: { pk: BINDING_RULE_PK, sk: id }, when: { exists: true } }],
        tables: ['acl_binding_rule'],
        events: [bindingRuleEvent('ACLBindingRuleDeleted', existing)],
      };
    });
  }

  /**
   * Deletes the auth method `name` and, in the same transaction, its binding rules (as Nomad does); 404 when there is
   * none, also for each loser of concurrent deletes. The method and its rules are read in the write's plan, so each
   * deletion (and its event) happens once and a rule written meanwhile is not left behind.
   */
  async deleteAuthMethod(name: string): Promise<number> {
    return this.state.commit(async () => {
      const existing = await this.authMethods.get(name);
      if (!existing) throw notFound('ACL auth-method not found');
      const rules = (await this.list()).filter((rule) => rule.AuthMethod === name);
      return {
        items: [
          this.authMethods.deleteItem(name),
          ...rules.map((rule) => ({ delete: { pk: BINDING_RULE_PK, sk: rule.ID } })),
        ],
        tables: ['acl_auth_method', ...(rules.length > 0 ? (['acl_binding_rule'] as const) : [])],
        events: [
          this.authMethods.event('ACLAuthMethodDeleted', existing),
          ...rules.map((rule) => bindingRuleEvent('ACLBindingRuleDeleted', rule)),
        ],
      };
    });
  }
}
