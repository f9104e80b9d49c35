import { badRequest, conflict } from '../../../lib/errors.ts';
import { randomBase62 } from '../../../lib/random.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import type { MountWrite } from '../../mounts/mount-storage.ts';
import { grantBindings } from './bindings.ts';
import type { EngineContext } from './engine-context.ts';
import { asDomainError, type GoogleClient } from './google-client.ts';
import {
  type AccountItem,
  type AccountValue,
  attributesOf,
  keyLeasePrefixes,
  sealTokenKey,
  type WalItem,
} from './records.ts';
import { rootClient } from './root-client.ts';
import { settleNow, switchWrites, walItem, writeAhead } from './wal.ts';

/**
 * The cloud side of rolesets and static accounts, each change in the same three steps: record ahead what
 * will be created, create it, then in one transaction store the new record, drop the records ahead and
 * record what the change makes obsolete; the obsolete resources are then removed (or left to the job).
 */

/** A service-account id for a roleset: `kh-<name>-<random>`, within IAM's 6–30 characters. */
export function accountIdFor(name: string): string {
  const stem = name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 16)
    .replace(/-$/, '');
  return `kh-${stem ? `${stem}-` : ''}${randomBase62(16)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '')
    .padEnd(8, '0')
    .slice(0, 8)}`;
}

/** The write that stores `next` only if the stored record is still `previous` (or absent when there was none). */
export function storeWrite(next: AccountItem, previous: AccountItem | undefined): MountWrite {
  return {
    put: next.sk,
    item: attributesOf(next),
    when: previous ? { equals: { 'value.generation': previous.value.generation } } : { absent: true },
  };
}

async function commit(
  ctx: EngineContext,
  writes: MountWrite[],
  ahead: WalItem[],
  google: GoogleClient,
  what: string,
): Promise<void> {
  try {
    await ctx.storage.transact(writes);
  } catch (error) {
    await settleNow(
      ctx,
      ahead.map((entry) => ({ ...entry, dueAt: 0 })),
      google,
    );
    if (error instanceof ConditionFailed) throw conflict(`${what} changed while it was being updated; try again`);
    throw error;
  }
}

/** Creates a key for the access-token owner's account; returns its name and the sealed credentials file. */
async function newTokenKey(ctx: EngineContext, google: GoogleClient, key: string, email: string) {
  const created = await google.createKey(email, 'KEY_ALG_RSA_2048', 'TYPE_GOOGLE_CREDENTIALS_FILE');
  return {
    name: created.name,
    sealed: sealTokenKey(ctx.storage, key, Buffer.from(created.privateKeyData, 'base64').toString('utf8')),
  };
}

/**
 * A new service account for a roleset (create, changed bindings, rotate): account, bindings and, for
 * access tokens, a key; the old account with its bindings and keys is removed after the switch.
 */
export async function replaceRolesetAccount(
  ctx: EngineContext,
  key: string,
  name: string,
  value: Omit<AccountValue, 'service_account_email' | 'generation'>,
  previous: AccountItem | undefined,
): Promise<void> {
  const google = await rootClient(ctx);
  const accountId = accountIdFor(name);
  const email = `${accountId}@${value.service_account_project}.iam.gserviceaccount.com`;
  const ahead = await writeAhead(ctx, [{ kind: 'account', owner: key, email, bindings: value.bindings }]);
  let next: AccountItem;
  try {
    await google.createServiceAccount(
      value.service_account_project,
      accountId,
      `Keyhaven roleset ${name}`.slice(0, 100),
      `Managed by Keyhaven mount ${ctx.mount.path} roleset ${name}`.slice(0, 256),
    );
    await grantBindings(google, `serviceAccount:${email}`, value.bindings);
    next = {
      sk: key,
      value: { ...value, service_account_email: email, generation: (previous?.value.generation ?? 0) + 1 },
      ...(value.secret_type === 'access_token' ? { tokenKey: await newTokenKey(ctx, google, key, email) } : {}),
    };
  } catch (error) {
    await settleNow(
      ctx,
      ahead.map((entry) => ({ ...entry, dueAt: 0 })),
      google,
    );
    throw asDomainError(error, `creating the service account of roleset "${name}"`);
  }
  const obsolete = previous
    ? [
        walItem(
          ctx,
          {
            kind: 'account',
            owner: key,
            email: previous.value.service_account_email,
            bindings: previous.value.bindings,
          },
          'now',
        ),
      ]
    : [];
  await commit(ctx, [storeWrite(next, previous), ...switchWrites(ahead, obsolete)], ahead, google, `roleset "${name}"`);
  if (previous) await revokeIssuedKeys(ctx, key);
  await settleNow(ctx, obsolete, google);
}

/** A new access-token key on the same account; the old key is deleted after the switch. */
export async function rotateTokenKey(
  ctx: EngineContext,
  key: string,
  what: string,
  previous: AccountItem,
): Promise<void> {
  if (previous.value.secret_type !== 'access_token')
    throw badRequest(`cannot rotate the key of ${what}: its secret_type is not access_token`);
  const google = await rootClient(ctx);
  const email = previous.value.service_account_email;
  let knownBefore: string[];
  try {
    knownBefore = (await google.listKeys(email)).map((entry) => entry.name);
  } catch (error) {
    throw asDomainError(error, `listing the keys of ${email}`);
  }
  const ahead = await writeAhead(ctx, [{ kind: 'new-keys', owner: key, email, knownBefore }]);
  let next: AccountItem;
  try {
    next = {
      ...previous,
      value: { ...previous.value, generation: previous.value.generation + 1 },
      tokenKey: await newTokenKey(ctx, google, key, email),
    };
  } catch (error) {
    await settleNow(
      ctx,
      ahead.map((entry) => ({ ...entry, dueAt: 0 })),
      google,
    );
    throw asDomainError(error, `creating a key for ${email}`);
  }
  const obsolete = previous.tokenKey
    ? [walItem(ctx, { kind: 'key', owner: key, email, keyName: previous.tokenKey.name }, 'now')]
    : [];
  await commit(ctx, [storeWrite(next, previous), ...switchWrites(ahead, obsolete)], ahead, google, what);
  await settleNow(ctx, obsolete, google);
}

/** Stores a record whose cloud side does not change (token scopes), if nobody changed it meanwhile. */
export async function storeOnly(
  ctx: EngineContext,
  next: AccountItem,
  previous: AccountItem,
  what: string,
): Promise<void> {
  try {
    await ctx.storage.transact([storeWrite(next, previous)]);
  } catch (error) {
    if (error instanceof ConditionFailed) throw conflict(`${what} changed while it was being updated; try again`);
    throw error;
  }
}

/** Deletes the record and records the removal of `obsolete` in the same write; then removes them. */
export async function deleteWithCloud(ctx: EngineContext, key: string, obsolete: WalItem[]): Promise<void> {
  await ctx.storage.transact([{ delete: key }, ...switchWrites([], obsolete)]);
  await revokeIssuedKeys(ctx, key);
  await settleNow(ctx, obsolete);
}

/**
 * Revokes the leases of keys issued under `roleset/<name>` or `static-account/<name>` (and the deprecated
 * `key/<roleset>` path). A revocation that fails stays queued with the lease manager's backoff.
 */
export async function revokeIssuedKeys(ctx: EngineContext, key: string): Promise<void> {
  for (const prefix of keyLeasePrefixes(key)) {
    await ctx.system.leases.revokePrefix(prefix).catch((error) => {
      ctx.system.log.error('revoking keys of a changed account failed; the leases retry', {
        key,
        error: (error as Error).message,
      });
    });
  }
}
