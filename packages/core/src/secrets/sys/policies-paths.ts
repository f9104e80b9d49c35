import * as z from 'zod';
import { badRequest, permissionDenied } from '../../lib/errors.ts';
import { type PathSpec, path } from '../framework/backend.ts';
import { stringList } from '../framework/fields.ts';
import type { Acl } from '../policies/acl.ts';
import type { BuiltinServices } from './builtin.ts';
import { sanitisePolicyName } from '../policies/policy-names.ts';
import { typeString } from '../framework/vault-field-types.ts';

const policyName = typeString.pipe(z.string().min(1)).describe('The name of the policy. Example: "ops"');
const pathsFields = {
  path: stringList.optional().describe('Use "paths" instead.'),
  paths: stringList.optional().describe('Paths on which capabilities are being queried.'),
};

/** `sys/policies/acl/:name` and the capability look-ups. */
export const policyPaths = (services: Pick<BuiltinServices, 'policies' | 'tokens'>): PathSpec[] => {
  const writePolicy = async ({ data }: { data: { name: string; policy?: string } }) => {
    if (!data.policy || data.policy.trim() === '') throw badRequest('"policy" is required');
    await services.policies.put(data.name, decodeIfBase64(data.policy));
    return undefined;
  };
  return [
    path({
      pattern: 'policies/acl',
      fields: z.object({}),
      summaries: { list: 'Lists the names of the ACL policies.' },
      operations: { list: async () => ({ data: { keys: await services.policies.list() } }) },
    }),
    path({
      pattern: 'policies/acl/:name',
      // The name as the policy store keeps it (trimmed, lower case): checked against the policy under that name.
      canonicalCaptures: { name: sanitisePolicyName },
      fields: z.object({
        name: policyName,
        policy: typeString
          .pipe(z.string())
          .optional()
          .describe('The rules of the policy, in HCL or JSON, optionally base64-encoded.'),
      }),
      summaries: {
        read: 'Retrieves information about the named ACL policy.',
        create: 'Adds a new ACL policy.',
        update: 'Updates an existing ACL policy.',
        delete: 'Deletes the ACL policy with the given name.',
      },
      exists: async ({ data }) => (await services.policies.get(data.name)) !== undefined,
      operations: {
        read: async ({ data }) => {
          const policy = await services.policies.get(data.name);
          return policy ? { data: { name: policy.name, policy: policy.text } } : undefined;
        },
        create: writePolicy,
        update: writePolicy,
        delete: async ({ data }) => {
          await services.policies.delete(data.name);
          return undefined;
        },
      },
    }),
    path({
      pattern: 'capabilities-self',
      fields: z.object(pathsFields),
      summaries: { update: "Reports the capabilities the caller's token has on the given paths." },
      operations: {
        update: async (request) => {
          if (!request.caller) throw permissionDenied();
          return capabilitiesReply(request.caller.acl, request.data);
        },
      },
    }),
    path({
      pattern: 'capabilities',
      fields: z.object({
        token: typeString.pipe(z.string().min(1)).describe('Token for which capabilities are being queried.'),
        ...pathsFields,
      }),
      summaries: { update: 'Reports the capabilities a token has on the given paths.' },
      operations: {
        update: async ({ data }) => {
          const entry = await services.tokens.lookup(data.token);
          if (!entry) throw badRequest('invalid token');
          return capabilitiesReply(await services.policies.acl(entry.policies), data);
        },
      },
    }),
    path({
      pattern: 'capabilities-accessor',
      fields: z.object({
        accessor: typeString
          .pipe(z.string().min(1))
          .describe('Accessor of the token for which capabilities are being queried.'),
        ...pathsFields,
      }),
      summaries: { update: 'Reports the capabilities the token with the given accessor has on the given paths.' },
      operations: {
        update: async ({ data }) => {
          const entry = await services.tokens.lookupAccessor(data.accessor);
          if (!entry) throw badRequest('invalid accessor');
          return capabilitiesReply(await services.policies.acl(entry.policies), data);
        },
      },
    }),
  ];
};

/** Vault accepts the policy base64-encoded to spare clients the escaping. */
function decodeIfBase64(text: string): string {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) || trimmed.length % 4 !== 0) return text;
  const decoded = Buffer.from(trimmed, 'base64').toString('utf8');
  return /path\s|"path"/.test(decoded) ? decoded : text;
}

function capabilitiesReply(acl: Acl, data: { path?: string[]; paths?: string[] }) {
  // As Vault: `paths`, else the deprecated `path`.
  const paths = (data.paths?.length ? data.paths : (data.path ?? [])).map((path) => path.replace(/^\/+/, ''));
  if (paths.length === 0) throw badRequest('"paths" is required');
  const result: Record<string, string[]> = {};
  for (const path of paths) result[path] = acl.capabilities(path).sort();
  // Vault repeats a single path's answer as `capabilities` for older clients; with several it would mislead.
  return { data: paths.length === 1 ? { ...result, capabilities: result[paths[0] as string] } : result };
}
