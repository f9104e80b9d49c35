import * as z from 'zod';
import type { Core } from '../../core.ts';
import { generatePassword, type PasswordPolicy, PasswordPolicyError, parsePasswordPolicy } from '../../lib/password.ts';
import { type PathSpec, path } from '../framework/backend.ts';
import { badRequest, notFound } from '../../lib/errors.ts';

/**
 * `sys/policies/password/:name` and `.../generate`: named password policies (HCL or JSON, optionally
 * base64-encoded) that engines use to generate passwords. They live in one partition of their own so any
 * engine, mounted anywhere, can read them.
 */

const partition = 'password-policies';
const nameField = z.string().regex(/^[^/]+$/, 'must be a policy name');

interface StoredPolicy {
  policy: string;
}

/** The parsed policy called `name`, or undefined when there is none. */
export async function loadPasswordPolicy(core: Core, name: string): Promise<PasswordPolicy | undefined> {
  const item = await core.store.get(partition, name);
  return item ? parsePasswordPolicy((item.value as StoredPolicy).policy) : undefined;
}

/** Like Vault: a policy that decodes as strict base64 is taken decoded. */
function decodePolicy(text: string): string {
  const trimmed = text.trim();
  if (trimmed.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) {
    const decoded = Buffer.from(trimmed, 'base64').toString('utf8');
    if (!decoded.includes('\uFFFD')) return decoded;
  }
  return text;
}

export const passwordPolicyPaths: PathSpec[] = [
  path({
    pattern: 'policies/password',
    fields: z.object({}),
    operations: {
      list: async ({ core }) => ({ data: { keys: (await core.store.prefix(partition, '')).map((item) => item.sk).sort() } }),
    },
  }),
  path({
    pattern: 'policies/password/:name/generate',
    fields: z.object({ name: nameField }),
    operations: {
      read: async ({ core, data }) => {
        const policy = await loadPasswordPolicy(core, data.name);
        if (!policy) throw notFound(`no password policy named "${data.name}"`);
        return { data: { password: generatePassword(policy) } };
      },
    },
  }),
  path({
    pattern: 'policies/password/:name',
    fields: z.object({ name: nameField, policy: z.string().optional() }),
    operations: {
      read: async ({ core, data }) => {
        const item = await core.store.get(partition, data.name);
        return item ? { data: { policy: (item.value as StoredPolicy).policy } } : undefined;
      },
      update: async ({ core, data }) => {
        if (data.policy === undefined || data.policy.trim() === '') throw badRequest('missing "policy": the password policy document is required');
        const policy = decodePolicy(data.policy);
        try {
          // Generating once proves the rules can be met, as Vault checks at write.
          generatePassword(parsePasswordPolicy(policy));
        } catch (error) {
          if (error instanceof PasswordPolicyError) throw badRequest(`invalid "policy": ${error.message}`);
          throw error;
        }
        await core.store.put({ Item: { pk: partition, sk: data.name, value: { policy } satisfies StoredPolicy } });
        return undefined;
      },
      delete: async ({ core, data }) => {
        await core.store.delete({ Key: { pk: partition, sk: data.name } });
        return undefined;
      },
    },
  }),
];
