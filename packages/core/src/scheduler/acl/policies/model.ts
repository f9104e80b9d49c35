/** An ACL policy: its type, its validation and the shapes the API shows (Nomad's `ACLPolicy`). */
import * as z from 'zod/mini';
import { badRequest } from '../../../lib/errors.ts';
import type { PendingEvent } from '../../state.ts';
import { policyNameParameter, shown, validPolicyName } from '../identifiers.ts';
import { PolicyParseError, parsePolicyRules } from '../policy-rules.ts';

export interface AclPolicy {
  Name: string;
  Description: string;
  Rules: string;
  JobACL: null;
  CreateIndex: number;
  ModifyIndex: number;
}

export type PolicyContent = Pick<AclPolicy, 'Name' | 'Description' | 'Rules'>;

export const policyBody = z.object({
  Name: z.optional(z.string()).check(z.describe('The policy name; when given it must match the name in the path.')),
  Description: z
    .optional(z.string())
    .check(z.describe('A human-readable description of the policy (at most 256 characters).')),
  Rules: z
    .optional(z.string())
    .check(
      z.describe(
        'The policy rules, in HCL or JSON (namespace, node, agent, operator, quota, plugin and host volume rules).',
      ),
    ),
});

const policyNameText = 'The name of the ACL policy: 1 to 128 letters, digits and dashes.';
/** The policy name of a read or a delete, checked by the route wrapper. */
export const policyName = policyNameParameter(policyNameText);
/** The policy name of a write: checked with the rest of the policy (`validatePolicy`, Nomad's validation message). */
export const writtenPolicyName = z.string().check(z.describe(policyNameText));

/** Refuses a policy Nomad would refuse, naming every problem. */
export function validatePolicy(input: PolicyContent): void {
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
}

export const policyEvent = (type: string, policy: AclPolicy): PendingEvent => ({
  Topic: 'ACLPolicy',
  Type: type,
  Key: policy.Name,
  Namespace: '',
  FilterKeys: null,
  Payload: { ACLPolicy: policy },
});

/** A policy as the list shows it. */
export const policyStub = (policy: AclPolicy) => ({
  Name: policy.Name,
  Description: policy.Description,
  CreateIndex: policy.CreateIndex,
  ModifyIndex: policy.ModifyIndex,
});
