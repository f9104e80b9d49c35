import * as z from 'zod';
import { badRequest } from '../../../lib/errors.ts';
import { listKeysUnder, path, type PathSpec, type Request } from '../../framework/backend.ts';
import { stringList } from '../../framework/fields.ts';
import { deleteWithCloud, replaceRolesetAccount, rotateTokenKey, storeOnly } from './account-changes.ts';
import { parseBindings, sameBindings } from './bindings.ts';
import { contextOf } from './engine-context.ts';
import { accountView, loadAccount, rolesetKey } from './records.ts';
import { itemName } from './item-name.ts';
import { walItem } from './wal.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/**
 * `roleset/:name`: a service account the engine creates in `project` with `bindings`, and the secrets it
 * issues from it. Changing the bindings (or `rotate`) replaces the account; `rotate-key` only its token key.
 */

const secretTypes = ['access_token', 'service_account_key'] as const;

const fields = z.object({
  name: itemName.describe('Name of the roleset.'),
  secret_type: z
    .enum(secretTypes)
    .optional()
    .describe(
      'Type of secret generated for this roleset: "access_token" (the default) or "service_account_key". Cannot be changed.',
    ),
  project: typeString
    .pipe(z.string())
    .optional()
    .describe("Name of the GCP project that this roleset's service account will belong to. Cannot be changed."),
  bindings: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'Bindings configuration string: resource blocks naming the roles granted on each resource, in HCL or JSON, raw or base64-encoded.',
    ),
  token_scopes: stringList
    .optional()
    .describe(
      'List of OAuth scopes to assign to access tokens generated under this roleset ("access_token" rolesets only).',
    ),
});
const named = z.object({ name: itemName.describe('Name of the roleset.') });
type Fields = z.output<typeof fields>;

/** The named roleset's record, for an operation on a roleset that must exist. */
async function existingRoleset(request: Request<{ name: string }>) {
  const key = rolesetKey(request.data.name);
  const item = await loadAccount(request.storage, key);
  if (!item) throw badRequest(`roleset "${request.data.name}" does not exist`);
  return { key, item };
}

async function write(request: Request<Fields>) {
  const { data } = request;
  const key = rolesetKey(data.name);
  const previous = await loadAccount(request.storage, key);
  if (previous) {
    if (data.secret_type !== undefined && data.secret_type !== previous.value.secret_type)
      throw badRequest('"secret_type" cannot be changed after the roleset is created');
    if (data.project !== undefined && data.project !== previous.value.service_account_project)
      throw badRequest('"project" cannot be changed after the roleset is created');
  } else {
    if (!data.project) throw badRequest('missing "project": the project of the roleset\'s service account is required');
    if (data.bindings === undefined)
      throw badRequest('missing "bindings": a roleset needs at least one resource binding');
  }
  const secretType = data.secret_type ?? previous?.value.secret_type ?? 'access_token';
  const project = data.project ?? (previous?.value.service_account_project as string);
  const scopes = data.token_scopes ?? previous?.value.token_scopes ?? [];
  if (secretType === 'access_token' && scopes.length === 0)
    throw badRequest('"token_scopes" is required for an access_token roleset');
  if (secretType === 'service_account_key' && data.token_scopes && data.token_scopes.length > 0) {
    throw badRequest('"token_scopes" only applies to access_token rolesets');
  }
  const bindings = data.bindings !== undefined ? parseBindings(data.bindings) : (previous?.value.bindings ?? {});
  const ctx = contextOf(request);
  if (previous && sameBindings(bindings, previous.value.bindings)) {
    // Unchanged bindings touch nothing in the cloud.
    await storeOnly(
      ctx,
      { ...previous, value: { ...previous.value, token_scopes: secretType === 'access_token' ? scopes : [] } },
      previous,
      `roleset "${data.name}"`,
    );
    return undefined;
  }
  await replaceRolesetAccount(
    ctx,
    key,
    data.name,
    {
      secret_type: secretType,
      service_account_project: project,
      bindings,
      token_scopes: secretType === 'access_token' ? scopes : [],
    },
    previous,
  );
  return undefined;
}

export const rolesetPaths: PathSpec[] = [
  path({
    pattern: 'roleset/:name',
    fields,
    summaries: {
      read: 'Read a roleset.',
      create: 'Create a roleset: a service account with the bindings, and for access tokens a key to mint them with.',
      update: 'Update a roleset; changed bindings replace its service account.',
      delete: 'Delete a roleset with its service account, bindings and keys.',
    },
    exists: async ({ storage, data }) => (await loadAccount(storage, rolesetKey(data.name))) !== undefined,
    operations: {
      read: async ({ storage, data }) => {
        const item = await loadAccount(storage, rolesetKey(data.name));
        return item ? { data: accountView(item.value) } : undefined;
      },
      create: write,
      update: write,
      delete: async (request) => {
        const key = rolesetKey(request.data.name);
        const item = await loadAccount(request.storage, key);
        if (!item) return undefined;
        const ctx = contextOf(request);
        await deleteWithCloud(ctx, key, [
          walItem(
            ctx,
            { kind: 'account', owner: key, email: item.value.service_account_email, bindings: item.value.bindings },
            'now',
          ),
        ]);
        return undefined;
      },
    },
  }),
  path({
    pattern: 'rolesets',
    fields: z.object({}),
    summaries: { list: 'List the rolesets.' },
    operations: {
      list: listKeysUnder('roleset/'),
    },
  }),
  path({
    pattern: 'roleset/:name/rotate',
    fields: named,
    summaries: { update: 'Rotate the service account (and key for an access-token roleset) used to generate secrets.' },
    operations: {
      update: async (request) => {
        const { key, item } = await existingRoleset(request);
        const { service_account_email: _email, generation: _generation, ...value } = item.value;
        await replaceRolesetAccount(contextOf(request), key, request.data.name, value, item);
        return undefined;
      },
    },
  }),
  path({
    pattern: 'roleset/:name/rotate-key',
    fields: named,
    summaries: { update: 'Rotate only the service-account key an access-token roleset mints tokens with.' },
    operations: {
      update: async (request) => {
        const { key, item } = await existingRoleset(request);
        await rotateTokenKey(contextOf(request), key, `roleset "${request.data.name}"`, item);
        return undefined;
      },
    },
  }),
];
