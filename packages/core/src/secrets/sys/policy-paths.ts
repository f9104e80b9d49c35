import * as z from 'zod';
import { badRequest } from '../../lib/errors.ts';
import { type PathSpec, path } from '../framework/backend.ts';
import type { BuiltinServices } from './builtin.ts';
import { sanitisePolicyName } from '../policies/policy-names.ts';
import { typeString } from '../framework/vault-field-types.ts';

/**
 * `sys/policy` and `sys/policy/:name`: the ACL policies under Vault's legacy paths, which hvac and node-vault still
 * use. The document is called `rules` here (`policy` is accepted too, as Vault does); the list answers both `keys`
 * and `policies`.
 */
export const legacyPolicyPaths = (services: Pick<BuiltinServices, 'policies'>): PathSpec[] => {
  const listReply = async () => {
    const names = await services.policies.list();
    return { data: { keys: names, policies: names } };
  };
  const writePolicy = async ({ data }: { data: { name: string; rules?: string; policy?: string } }) => {
    const text = data.rules ?? data.policy;
    if (text === undefined || text.trim() === '')
      throw badRequest('"rules" is required: the policy document in HCL or JSON');
    await services.policies.put(data.name, text);
    return undefined;
  };
  return [
    path({
      pattern: 'policy',
      fields: z.object({}),
      summaries: { read: 'Lists the names of the ACL policies.', list: 'Lists the names of the ACL policies.' },
      operations: { read: listReply, list: listReply },
    }),
    path({
      pattern: 'policy/:name',
      // The name as the policy store keeps it (trimmed, lower case): checked against the policy under that name.
      canonicalCaptures: { name: sanitisePolicyName },
      fields: z.object({
        name: typeString.pipe(z.string().min(1)).describe('The name of the policy. Example: "ops"'),
        rules: typeString.pipe(z.string()).optional().describe('The rules of the policy, in HCL or JSON.'),
        policy: typeString.pipe(z.string()).optional().describe('The rules of the policy (another name for "rules").'),
      }),
      summaries: {
        read: 'Retrieves the rules of the named ACL policy.',
        create: 'Adds a new ACL policy.',
        update: 'Updates an existing ACL policy.',
        delete: 'Deletes the ACL policy with the given name.',
      },
      exists: async ({ data }) => (await services.policies.get(data.name)) !== undefined,
      operations: {
        read: async (request) => {
          const policy = await services.policies.get(request.data.name);
          return policy ? { data: { name: policy.name, rules: policy.text } } : undefined;
        },
        create: writePolicy,
        update: writePolicy,
        delete: async ({ data }) => {
          await services.policies.delete(data.name);
          return undefined;
        },
      },
    }),
  ];
};
