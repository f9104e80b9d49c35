/** ACL policies: `/v1/acl/policies`, `/v1/acl/policy/:name`. */
import type { Context, Hono } from 'hono';
import * as z from 'zod';
import { badRequest, blockingQuery, notFound, permissionDenied, readBody, setIndexHeaders } from '../http/nomad.ts';
import type { SchedulerEnv } from '../scheduler.ts';
import type { SchedulerState } from '../state.ts';
import { sameContent, withoutKeys } from './common.ts';
import { shown, requirePolicyName, validPolicyName } from './identifiers.ts';
import { PolicyParseError, type PolicyRules, parsePolicyRules } from './policy-rules.ts';

export const POLICY_PK = 'sched#policy';

export interface AclPolicy {
  Name: string;
  Description: string;
  Rules: string;
  JobACL: null;
  CreateIndex: number;
  ModifyIndex: number;
}

export class AclPolicies {
  private readonly compiled = new Map<string, { modifyIndex: number; rules: PolicyRules }>();
  constructor(private readonly state: SchedulerState) {}

  /** The policy of that name; a name no policy can have (it would not fit a key) finds none. */
  async get(name: string): Promise<AclPolicy | undefined> {
    if (!validPolicyName.test(name)) return undefined;
    return withoutKeys<AclPolicy>(await this.state.store.get(POLICY_PK, name));
  }

  async list(): Promise<AclPolicy[]> {
    return (await this.state.store.prefix(POLICY_PK, '')).map((item) => withoutKeys<AclPolicy>(item) as AclPolicy);
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
  async upsert(input: { Name: string; Description: string; Rules: string }): Promise<AclPolicy> {
    const problems: string[] = [];
    if (!validPolicyName.test(input.Name)) problems.push(`invalid name '${shown(input.Name)}'`);
    if (input.Description.length > 256) problems.push('description longer than 256');
    try {
      parsePolicyRules(input.Rules);
    } catch (error) {
      if (!(error instanceof PolicyParseError)) throw error;
      problems.push(`failed to parse rules: ${error.message}`);
    }
    if (problems.length > 0) throw badRequest(`ACL policy validation failed: ${problems.join('; ')}`);
    const content = { Name: input.Name, Description: input.Description, Rules: input.Rules };
    let result: AclPolicy | undefined;
    await this.state.commit(async (index) => {
      const existing = await this.get(input.Name);
      if (existing && sameContent(content, { Name: existing.Name, Description: existing.Description, Rules: existing.Rules })) {
        result = existing;
        return undefined;
      }
      const stored: AclPolicy = { ...content, JobACL: null, CreateIndex: existing?.CreateIndex ?? index, ModifyIndex: index };
      result = stored;
      return {
        items: [{ Put: { Item: { pk: POLICY_PK, sk: input.Name, ...stored } } }],
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
        items: [{ Delete: { Key: { pk: POLICY_PK, sk: name } } }],
        tables: ['acl_policy'],
        events: [policyEvent('ACLPolicyDeleted', existing)],
      };
    });
  }
}

const policyEvent = (type: string, policy: AclPolicy) => ({
  Topic: 'ACLPolicy',
  Type: type,
  Key: policy.Name,
  Namespace: '',
  FilterKeys: null,
  Payload: { ACLPolicy: policy },
});

const policyBody = z.object({
  Name: z.string().optional(),
  Description: z.string().optional(),
  Rules: z.string().optional(),
});

const stub = (policy: AclPolicy) => ({
  Name: policy.Name,
  Description: policy.Description,
  CreateIndex: policy.CreateIndex,
  ModifyIndex: policy.ModifyIndex,
});

export function policyRoutes(app: Hono<SchedulerEnv>): void {
  app.get('/v1/acl/policies', async (c) => {
    const { scheduler } = c.var;
    const caller = await scheduler.caller(c);
    const prefix = c.req.query('prefix') ?? '';
    return blockingQuery(c, scheduler.state, ['acl_policy'], async () => {
      const mine = caller.management ? undefined : new Set(caller.policyNames);
      return (await scheduler.policies.list())
        .filter((policy) => policy.Name.startsWith(prefix) && (!mine || mine.has(policy.Name)))
        .map(stub);
    });
  });

  app.get('/v1/acl/policy/:name', async (c) => {
    const { scheduler } = c.var;
    const caller = await scheduler.caller(c);
    const name = c.req.param('name') as string;
    if (!caller.management && !caller.policyNames.includes(name)) throw permissionDenied();
    requirePolicyName(name);
    return blockingQuery(c, scheduler.state, ['acl_policy'], async () => {
      const policy = await scheduler.policies.get(name);
      if (!policy) throw notFound('ACL policy not found');
      return policy;
    });
  });

  const write = async (c: Context<SchedulerEnv>) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    // The name is checked, before it reaches a key, with the rest of the policy (Nomad's validation message).
    const name = c.req.param('name') as string;
    const body = await readBody(c, policyBody);
    if (body.Name && body.Name !== name) throw badRequest('Policy name does not match request path');
    const policy = await scheduler.policies.upsert({ Name: name, Description: body.Description ?? '', Rules: body.Rules ?? '' });
    setIndexHeaders(c, policy.ModifyIndex);
    return c.body(null, 200);
  };
  app.post('/v1/acl/policy/:name', write);
  app.put('/v1/acl/policy/:name', write);

  app.delete('/v1/acl/policy/:name', async (c) => {
    const { scheduler } = c.var;
    await scheduler.requireManagement(c);
    const name = requirePolicyName(c.req.param('name'));
    setIndexHeaders(c, (await scheduler.policies.delete(name)) ?? (await scheduler.state.tableIndex(['acl_policy'])));
    return c.body(null, 200);
  });
}
