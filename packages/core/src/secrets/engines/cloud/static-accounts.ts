import * as z from 'zod';
import { badRequest, conflict } from '../../../lib/errors.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import type { PathSpec, Request } from '../../framework/backend.ts';
import { accountPaths, secretSettings, rotateKeyPath } from './account-paths.ts';
import { stringList } from '../../framework/fields.ts';
import { revokeIssuedKeys, storeOnly, storeWrite } from './account-changes.ts';
import { type Bindings, grantBindings, parseBindings, sameBindings } from './bindings.ts';
import { contextOf } from './engine-context.ts';
import { asDomainError, isNotFound } from './google-client.ts';
import { type AccountItem, loadAccount, sealTokenKey, staticAccountKey, type WalItem } from './records.ts';
import { itemName } from './item-name.ts';
import { rootClient } from './root-client.ts';
import { settleNow, switchWrites, type WalDraft, walItem, writeAhead } from './wal.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/**
 * `static-account/:name`: an existing service account the engine manages. Only the bindings given here are
 * the engine's (granted on write, taken back on change or delete); bindings made outside are left alone.
 */

const fields = z.object({
  name: itemName.describe('Name to refer to this static account by. Cannot be changed.'),
  secret_type: z
    .enum(['access_token', 'service_account_key'])
    .optional()
    .describe(
      'Type of secret generated for this account: "access_token" (the default) or "service_account_key". Cannot be changed.',
    ),
  service_account_email: typeString
    .pipe(z.string())
    .optional()
    .describe('Email of the existing GCP service account to manage. Required; cannot be changed.'),
  bindings: typeString
    .pipe(z.string())
    .optional()
    .describe(
      "Bindings configuration string: resource blocks naming the roles granted to the account on each resource, in HCL or JSON, raw or base64-encoded. Only these bindings are the engine's.",
    ),
  token_scopes: stringList
    .optional()
    .describe(
      'List of OAuth scopes to assign to access tokens generated under this account ("access_token" accounts only).',
    ),
});
const named = z.object({ name: itemName.describe('Name of the static account.') });
type Fields = z.output<typeof fields>;
const names = { segment: 'static-account', noun: 'static account', keyOf: staticAccountKey };

async function write(request: Request<Fields>) {
  const { data, storage } = request;
  const key = staticAccountKey(data.name);
  const what = `static account "${data.name}"`;
  const previous = await loadAccount(storage, key);
  if (previous) {
    if (data.secret_type !== undefined && data.secret_type !== previous.value.secret_type)
      throw badRequest('"secret_type" cannot be changed after the static account is created');
    if (
      data.service_account_email !== undefined &&
      data.service_account_email !== previous.value.service_account_email
    ) {
      throw badRequest('"service_account_email" cannot be changed after the static account is created');
    }
  } else if (!data.service_account_email) {
    throw badRequest('missing "service_account_email": the existing service account to manage is required');
  }
  const { secretType, tokenScopes } = secretSettings(data, previous, names.noun);
  const bindings: Bindings =
    data.bindings === undefined
      ? (previous?.value.bindings ?? {})
      : data.bindings.trim() === ''
        ? {}
        : parseBindings(data.bindings);
  const ctx = contextOf(request);
  if (previous && sameBindings(bindings, previous.value.bindings)) {
    await storeOnly(ctx, { ...previous, value: { ...previous.value, token_scopes: tokenScopes } }, previous, what);
    return undefined;
  }

  const google = await rootClient(ctx);
  const email = previous?.value.service_account_email ?? (data.service_account_email as string);
  let project = previous?.value.service_account_project ?? '';
  let knownBefore: string[] = [];
  try {
    if (!previous) {
      project = (await google.getServiceAccount(email)).projectId;
      if (secretType === 'access_token') knownBefore = (await google.listKeys(email)).map((entry) => entry.name);
    }
  } catch (error) {
    if (isNotFound(error)) throw badRequest(`invalid "service_account_email": service account ${email} does not exist`);
    throw asDomainError(error, `reading service account ${email}`);
  }
  const drafts: WalDraft[] = [{ kind: 'bindings', owner: key, email, bindings }];
  if (!previous && secretType === 'access_token') drafts.push({ kind: 'new-keys', owner: key, email, knownBefore });
  const ahead = await writeAhead(ctx, drafts);
  let next: AccountItem;
  try {
    await grantBindings(google, `serviceAccount:${email}`, bindings);
    next = {
      sk: key,
      value: {
        secret_type: secretType,
        service_account_email: email,
        service_account_project: project,
        bindings,
        token_scopes: tokenScopes,
        generation: (previous?.value.generation ?? 0) + 1,
      },
      ...(previous?.tokenKey ? { tokenKey: previous.tokenKey } : {}),
    };
    if (!previous && secretType === 'access_token') {
      const created = await google.createKey(email, 'KEY_ALG_RSA_2048', 'TYPE_GOOGLE_CREDENTIALS_FILE');
      next.tokenKey = {
        name: created.name,
        sealed: sealTokenKey(storage, key, Buffer.from(created.privateKeyData, 'base64').toString('utf8')),
      };
    }
  } catch (error) {
    await settleNow(
      ctx,
      ahead.map((entry) => ({ ...entry, dueAt: 0 })),
      google,
    );
    throw asDomainError(error, `applying ${what}`);
  }
  const obsolete: WalItem[] = previous
    ? [walItem(ctx, { kind: 'bindings', owner: key, email, bindings: previous.value.bindings }, 'now')]
    : [];
  try {
    await storage.transact([storeWrite(next, previous), ...switchWrites(ahead, obsolete)]);
  } catch (error) {
    await settleNow(
      ctx,
      ahead.map((entry) => ({ ...entry, dueAt: 0 })),
      google,
    );
    if (error instanceof ConditionFailed) throw conflict(`${what} changed while it was being updated; try again`);
    throw error;
  }
  if (previous) await revokeIssuedKeys(ctx, key);
  await settleNow(ctx, obsolete, google);
  return undefined;
}

export const staticAccountPaths: PathSpec[] = [
  ...accountPaths({
    ...names,
    fields,
    summaries: {
      read: 'Read a static account.',
      create:
        'Start managing an existing service account: grant its bindings and, for access tokens, make a key to mint them with.',
      update: "Update a static account's bindings or token scopes.",
      delete: 'Stop managing a static account: its bindings are taken back and the keys the engine made deleted.',
      list: 'List the static accounts.',
    },
    write,
    undo: (ctx, key, found) => {
      const email = found.value.service_account_email;
      return [
        walItem(ctx, { kind: 'bindings', owner: key, email, bindings: found.value.bindings }, 'now'),
        ...(found.tokenKey
          ? [walItem(ctx, { kind: 'key', owner: key, email, keyName: found.tokenKey.name }, 'now')]
          : []),
      ];
    },
  }),
  rotateKeyPath(names, named, 'Rotate the service-account key an access-token static account mints tokens with.'),
];
