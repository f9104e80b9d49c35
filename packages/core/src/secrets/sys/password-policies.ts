import * as z from 'zod';
import { badRequest, notFound } from '../../lib/errors.ts';
import { generatePassword, PasswordPolicyError, parsePasswordPolicy } from '../../lib/password.ts';
import { type PathSpec, path } from '../framework/backend.ts';
import {
  loadPasswordPolicy,
  passwordPolicyKind,
  passwordPolicyPartition as partition,
  type StoredPasswordPolicy as StoredPolicy,
} from '../policies/password-policy-store.ts';
import type { BuiltinServices } from './builtin.ts';
import { typeString } from '../framework/vault-field-types.ts';

/**
 * `sys/policies/password/:name` and `.../generate`: named password policies (HCL or JSON, optionally
 * base64-encoded) that engines use to generate passwords (stored by `policies/password-policy-store.ts`).
 */

const nameField = typeString
  .pipe(z.string().regex(/^[^/]+$/, 'must be a policy name'))
  .describe('The name of the password policy.');

/** Like Vault: a policy that decodes as strict base64 is taken decoded. */
function decodePolicy(text: string): string {
  const trimmed = text.trim();
  if (trimmed.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) {
    const decoded = Buffer.from(trimmed, 'base64').toString('utf8');
    if (!decoded.includes('\uFFFD')) return decoded;
  }
  return text;
}

export const passwordPolicyPaths = (services: Pick<BuiltinServices, 'store'>): PathSpec[] => [
  path({
    pattern: 'policies/password',
    fields: z.object({}),
    summaries: { list: 'Lists the names of the password policies.' },
    operations: {
      list: async () => ({
        data: {
          keys: (await services.store.list(partition))
            .filter((item) => services.store.verified(passwordPolicyKind, item))
            .map((item) => item.sk)
            .sort(),
        },
      }),
    },
  }),
  path({
    pattern: 'policies/password/:name/generate',
    fields: z.object({ name: nameField }),
    summaries: { read: 'Generates a password from the password policy.' },
    operations: {
      read: async ({ data }) => {
        const policy = await loadPasswordPolicy(services, data.name);
        if (!policy) throw notFound(`no password policy named "${data.name}"`);
        return { data: { password: generatePassword(policy) } };
      },
    },
  }),
  path({
    pattern: 'policies/password/:name',
    fields: z.object({
      name: nameField,
      policy: typeString
        .pipe(z.string())
        .optional()
        .describe('The password policy: its rules in HCL or JSON, optionally base64-encoded.'),
    }),
    summaries: {
      read: 'Reads a password policy.',
      update: 'Adds a new or updates an existing password policy.',
      delete: 'Deletes a password policy.',
    },
    operations: {
      read: async ({ data }) => {
        const item = await services.store.getVerified(passwordPolicyKind, partition, data.name);
        return item ? { data: { policy: (item.value as StoredPolicy).policy } } : undefined;
      },
      update: async ({ data }) => {
        if (data.policy === undefined || data.policy.trim() === '')
          throw badRequest('missing "policy": the password policy document is required');
        const policy = decodePolicy(data.policy);
        try {
          // Generating once proves the rules can be met, as Vault checks at write.
          generatePassword(parsePasswordPolicy(policy));
        } catch (error) {
          if (error instanceof PasswordPolicyError) throw badRequest(`invalid "policy": ${error.message}`);
          throw error;
        }
        await services.store.put(
          services.store.signed(passwordPolicyKind, {
            pk: partition,
            sk: data.name,
            value: { policy } satisfies StoredPolicy,
          }),
        );
        return undefined;
      },
      delete: async ({ data }) => {
        await services.store.delete({ pk: partition, sk: data.name });
        return undefined;
      },
    },
  }),
];
