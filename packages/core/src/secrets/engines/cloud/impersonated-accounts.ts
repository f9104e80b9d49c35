import * as z from 'zod';
import { type PathSpec, path, type Request } from '../../framework/backend.ts';
import { badRequest } from '../../../lib/errors.ts';
import { duration, stringList } from '../../framework/fields.ts';
import { contextOf } from './engine-context.ts';
import { asApiError, isNotFound } from './google-client.ts';
import { impersonatedKey } from './records.ts';
import { rootClient } from './root-client.ts';
import { cachedToken, tokenReply } from './token-cache.ts';

/**
 * `impersonated-account/:name`: tokens for an existing service account minted by IAM Credentials'
 * `generateAccessToken` as the root account: no key of the account is ever made.
 */

export const defaultImpersonationTtl = 3600;
export const maxImpersonationTtl = 12 * 3600;

interface ImpersonatedValue {
  service_account_email: string;
  service_account_project: string;
  token_scopes: string[];
  ttl: number;
}

const name = z.string().regex(/^[\w-]+$/, 'must be letters, digits, "_" and "-"');
const fields = z.object({
  name,
  service_account_email: z.string().optional(),
  token_scopes: stringList.optional(),
  ttl: duration.optional(),
});
type Fields = z.output<typeof fields>;

const load = (request: Request<{ name: string }>) => request.storage.get<{ value: ImpersonatedValue }>(impersonatedKey(request.data.name));

async function write(request: Request<Fields>) {
  const { data } = request;
  const previous = (await load(request))?.value;
  if (previous && data.service_account_email !== undefined && data.service_account_email !== previous.service_account_email) {
    throw badRequest('"service_account_email" cannot be changed after the impersonated account is created');
  }
  const email = previous?.service_account_email ?? data.service_account_email;
  if (!email) throw badRequest('missing "service_account_email": the service account to impersonate is required');
  const scopes = data.token_scopes ?? previous?.token_scopes ?? [];
  if (scopes.length === 0) throw badRequest('"token_scopes" is required: generated access tokens need at least one scope');
  const ttl = data.ttl === undefined ? (previous?.ttl ?? defaultImpersonationTtl) : data.ttl || defaultImpersonationTtl;
  if (ttl > maxImpersonationTtl) throw badRequest(`invalid "ttl": at most ${maxImpersonationTtl} seconds (12h)`);
  let project = previous?.service_account_project;
  if (!project) {
    try {
      project = (await (await rootClient(contextOf(request))).getServiceAccount(email)).projectId;
    } catch (error) {
      if (isNotFound(error)) throw badRequest(`invalid "service_account_email": service account ${email} does not exist`);
      throw asApiError(error, `reading service account ${email}`);
    }
  }
  const value: ImpersonatedValue = { service_account_email: email, service_account_project: project, token_scopes: scopes, ttl };
  await request.storage.put(impersonatedKey(data.name), { value: value as unknown as Record<string, unknown> });
  return undefined;
}

async function token(request: Request<{ name: string }>) {
  const found = (await load(request))?.value;
  if (!found) throw badRequest(`impersonated account "${request.data.name}" does not exist`);
  const google = await rootClient(contextOf(request));
  const key = `${request.mount.uuid}|impersonate|${found.service_account_email}|${found.token_scopes.join(' ')}|${found.ttl}`;
  try {
    const minted = await cachedToken(request.system.clock, key, async () => {
      const reply = await google.generateAccessToken(found.service_account_email, found.token_scopes, found.ttl);
      return { token: reply.accessToken, expiresIn: Math.max(0, Math.round((Date.parse(reply.expireTime) - Date.now()) / 1000)) };
    });
    return tokenReply(request.system.clock, minted);
  } catch (error) {
    throw asApiError(error, `generating an access token for impersonated account "${request.data.name}"`);
  }
}

export const impersonatedAccountPaths: PathSpec[] = [
  path({
    pattern: 'impersonated-account/:name',
    fields,
    exists: async (request) => (await load(request)) !== undefined,
    operations: {
      read: async (request) => {
        const found = (await load(request))?.value;
        return found ? { data: { ...found } } : undefined;
      },
      create: write,
      update: write,
      delete: async ({ storage, data }) => {
        await storage.delete(impersonatedKey(data.name));
        return undefined;
      },
    },
  }),
  path({
    pattern: 'impersonated-accounts',
    fields: z.object({}),
    operations: { list: async ({ storage }) => ({ data: { keys: await storage.list('impersonated-account/') } }) },
  }),
  path({
    pattern: 'impersonated-account/:name/token',
    fields: z.object({ name }),
    operations: { read: token, update: token },
  }),
];
