/** ACL policies in the table: one item per policy (`POLICY_PK`, the name), parsed rules cached by modify index. */
import { itemKind } from '../../../storage/item-mac.ts';
import { POLICY_PK } from '../../keys.ts';
import type { SchedulerState } from '../../state.ts';
import { sameContent, withoutKeys } from '../common.ts';
import { validPolicyName } from '../identifiers.ts';
import { type PolicyRules, parsePolicyRules } from '../policy-rules.ts';
import { type AclPolicy, type PolicyContent, policyEvent, validatePolicy } from './model.ts';

/** A policy item is authenticated whole (`storage/item-mac.ts`): a forged or moved policy does not exist. */
export const policyKind = itemKind('scheduler-acl-policy', [], { epoch: 'bootstrap' });

export class AclPolicies {
  private readonly compiled = new Map<string, { modifyIndex: number; rules: PolicyRules }>();
  constructor(private readonly state: SchedulerState) {}

  /** The policy of that name; a name no policy can have (it would not fit a key) finds none. */
  async get(name: string): Promise<AclPolicy | undefined> {
    if (!validPolicyName.test(name)) return undefined;
    return withoutKeys<AclPolicy>(await this.state.store.getVerified(policyKind, POLICY_PK, name));
  }

  async list(): Promise<AclPolicy[]> {
    return (await this.state.store.list(POLICY_PK))
      .filter((item) => this.state.store.verified(policyKind, item))
      .map((item) => withoutKeys<AclPolicy>(item) as AclPolicy);
  }

  /** Parsed rules of the named policies that exist (a token may name a policy that was deleted). */
  async rules(names: string[]): Promise<PolicyRules[]> {
    const out: PolicyRules[] = [];
    for (const name of new Set(names)) {
      const policy = await this.get(name);
      if (!policy) continue;
      const cached = this.compiled.get(name);
      if (cached?.modifyIndex === policy.ModifyIndex) {
        out.push(cached.rules);
        continue;
      }
      const rules = parsePolicyRules(policy.Rules);
      this.compiled.set(name, { modifyIndex: policy.ModifyIndex, rules });
      out.push(rules);
    }
    return out;
  }

  /**
   * Creates or replaces a policy; an unchanged policy is not rewritten and keeps its index, so of concurrent
   * identical writes one changes the policy and publishes the event.
   */
  async upsert(input: PolicyContent): Promise<AclPolicy> {
    validatePolicy(input);
    const content = { Name: input.Name, Description: input.Description, Rules: input.Rules };
    let result: AclPolicy | undefined;
    await this.state.commit(async (index) => {
      const existing = await this.get(input.Name);
      if (
        existing &&
        sameContent(content, { Name: existing.Name, Description: existing.Description, Rules: existing.Rules })
      ) {
        result = existing;
        return undefined;
      }
      const stored: AclPolicy = {
        ...content,
        JobACL: null,
        CreateIndex: existing?.CreateIndex ?? index,
        ModifyIndex: index,
      };
      result = stored;
      return {
        items: [{ put: this.state.store.signed(policyKind, { pk: POLICY_PK, sk: input.Name, ...stored }) }],
        tables: ['acl_policy'],
        events: [policyEvent('ACLPolicyUpserted', stored)],
      };
    });
    return result as AclPolicy;
  }

  /**
   * Deletes a policy; the index of the deletion, or undefined when there was no such policy (Nomad deletes a missing
   * policy as a no-op), so of concurrent deletes one deletes and publishes the event.
   */
  async delete(name: string): Promise<number | undefined> {
    return this.state.commit(async () => {
      const existing = await this.get(name);
      if (!existing) return undefined;
      return {
        items: [{ delete: { pk: POLICY_PK, sk: name } }],
        tables: ['acl_policy'],
        events: [policyEvent('ACLPolicyDeleted', existing)],
      };
    });
  }
}
