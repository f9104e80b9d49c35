import * as z from 'zod';
import { badRequest } from '../../../lib/errors.ts';
import { path, type PathSpec, type Request } from '../../framework/backend.ts';
import { accountPaths, secretSettings, existingAccount, rotateKeyPath } from './account-paths.ts';
import { stringList } from '../../framework/fields.ts';
import { replaceRolesetAccount, storeOnly } from './account-changes.ts';
import { parseBindings, sameBindings } from './bindings.ts';
import { contextOf } from './engine-context.ts';
import { loadAccount, rolesetKey } from './records.ts';
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

const names = { segment: 'roleset', noun: 'roleset', keyOf: rolesetKey };

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
  const { secretType, tokenScopes } = secretSettings(data, previous, names.noun);
  const project = data.project ?? (previous?.value.service_account_project as string);
  const bindings = data.bindings !== undefined ? parseBindings(data.bindings) : (previous?.value.bindings ?? {});
  const ctx = contextOf(request);
  if (previous && sameBindings(bindings, previous.value.bindings)) {
    // Unchanged bindings touch nothing in the cloud.
    await storeOnly(
      ctx,
      { ...previous, value: { ...previous.value, token_scopes: tokenScopes } },
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
      token_scopes: tokenScopes,
    },
    previous,
  );
  return undefined;
}

export const rolesetPaths: PathSpec[] = [
  ...accountPaths({
    ...names,
    fields,
    summaries: {
      read: 'Read a roleset.',
      create: 'Create a roleset: a service account with the bindings, and for access tokens a key to mint them with.',
      update: 'Update a roleset; changed bindings replace its service account.',
      delete: 'Delete a roleset with its service account, bindings and keys.',
      list: 'List the rolesets.',
    },
    write,
    undo: (ctx, key, item) => [
      walItem(
        ctx,
        { kind: 'account', owner: key, email: item.value.service_account_email, bindings: item.value.bindings },
        'now',
      ),
    ],
  }),
  path({
    pattern: 'roleset/:name/rotate',
    fields: named,
    summaries: { update: 'Rotate the service account (and key for an access-token roleset) used to generate secrets.' },
    operations: {
      update: async (request) => {
        const { key, item } = await existingAccount(names, request);
        const { service_account_email: _email, generation: _generation, ...value } = item.value;
        await replaceRolesetAccount(contextOf(request), key, request.data.name, value, item);
        return undefined;
      },
    },
  }),
  rotateKeyPath(names, named, 'Rotate only the service-account key an access-token roleset mints tokens with.'),
];
