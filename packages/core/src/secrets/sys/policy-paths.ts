import * as z from 'zod';
import { type PathSpec, path } from '../framework/backend.ts';
import { badRequest } from '../../lib/errors.ts';
import { envelopeWithTopLevelData } from './top-level-data.ts';

/**
 * `sys/policy` and `sys/policy/:name`: the ACL policies under Vault's legacy paths, which hvac and node-vault still
 * use. The document is called `rules` here (`policy` is accepted too, as Vault does); the list answers both `keys`
 * and `policies`.
 */
export const legacyPolicyPaths: PathSpec[] = [
  path({
    pattern: 'policy',
    fields: z.object({}),
    operations: {
      read: async (request) => listReply(request),
      list: async (request) => listReply(request),
    },
  }),
  path({
    pattern: 'policy/:name',
    fields: z.object({
      name: z.string().min(1),
      rules: z.string().optional(),
      policy: z.string().optional(),
    }),
    exists: async ({ core, data }) => (await core.policies.get(data.name)) !== undefined,
    operations: {
      read: async (request) => {
        const policy = await request.core.policies.get(request.data.name);
        return policy
          ? envelopeWithTopLevelData(request, {
              name: policy.name,
              rules: policy.text,
            })
          : undefined;
      },
      create: writePolicy,
      update: writePolicy,
      delete: async ({ core, data }) => {
        await core.policies.delete(data.name);
        return undefined;
      },
    },
  }),
];

async function listReply(request: Parameters<typeof envelopeWithTopLevelData>[0]) {
  const names = await request.core.policies.list();
  return envelopeWithTopLevelData(request, { keys: names, policies: names });
}

async function writePolicy({ core, data }: { core: import('../../core.ts').Core; data: { name: string; rules?: string; policy?: string } }) {
  const text = data.rules ?? data.policy;
  if (text === undefined || text.trim() === '') throw badRequest('"rules" is required: the policy document in HCL or JSON');
  await core.policies.put(data.name, text);
  return undefined;
}
