import * as z from 'zod';
import { type PathSpec, path, type Request } from '../framework/backend.ts';
import { badRequest, permissionDenied } from '../../lib/errors.ts';
import { stringList } from '../framework/fields.ts';
import type { Acl } from '../policies/acl.ts';

const nameField = z.object({ name: z.string().min(1) });

/** `sys/policies/acl/:name` and the capability look-ups. */
export const policyPaths: PathSpec[] = [
  path({
    pattern: 'policies/acl',
    fields: z.object({}),
    operations: { list: async ({ core }) => ({ data: { keys: await core.policies.list() } }) },
  }),
  path({
    pattern: 'policies/acl/:name',
    fields: z.object({ name: z.string().min(1), policy: z.string().optional() }),
    exists: async ({ core, data }) => (await core.policies.get(data.name)) !== undefined,
    operations: {
      read: async ({ core, data }) => {
        const policy = await core.policies.get(data.name);
        return policy ? { data: { name: policy.name, policy: policy.text } } : undefined;
      },
      create: writePolicy,
      update: writePolicy,
      delete: async ({ core, data }) => {
        await core.policies.delete((data as z.output<typeof nameField>).name);
        return undefined;
      },
    },
  }),
  path({
    pattern: 'capabilities-self',
    fields: z.object({ path: stringList.optional(), paths: stringList.optional() }),
    operations: {
      update: async (request) => {
        if (!request.caller) throw permissionDenied();
        return capabilitiesReply(request.caller.acl, request.data);
      },
    },
  }),
  path({
    pattern: 'capabilities',
    fields: z.object({ token: z.string().min(1), path: stringList.optional(), paths: stringList.optional() }),
    operations: {
      update: async ({ core, data }) => {
        const entry = await core.tokens.lookup(data.token);
        if (!entry) throw badRequest('invalid token');
        return capabilitiesReply(await core.policies.acl(entry.policies), data);
      },
    },
  }),
  path({
    pattern: 'capabilities-accessor',
    fields: z.object({ accessor: z.string().min(1), path: stringList.optional(), paths: stringList.optional() }),
    operations: {
      update: async ({ core, data }) => {
        const entry = await core.tokens.lookupAccessor(data.accessor);
        if (!entry) throw badRequest('invalid accessor');
        return capabilitiesReply(await core.policies.acl(entry.policies), data);
      },
    },
  }),
];

async function writePolicy(request: Request<{ name: string; policy?: string }>) {
  const { name, policy } = request.data;
  if (!policy || policy.trim() === '') throw badRequest('"policy" is required');
  await request.core.policies.put(name, decodeIfBase64(policy));
  return undefined;
}

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
