import * as z from 'zod';
import { badRequest } from '../../../lib/errors.ts';
import { listKeysUnder, path, type PathSpec, type Request } from '../../framework/backend.ts';
import { deleteWithCloud, rotateTokenKey } from './account-changes.ts';
import { contextOf, type EngineContext } from './engine-context.ts';
import { type AccountItem, type AccountValue, accountView, loadAccount, type WalItem } from './records.ts';

/**
 * The rows a kind of engine-managed service account (a roleset, a static account) shares: `<kind>/:name` with
 * read, create/update and a delete that takes the account's cloud state back, the `<kinds>` list, and
 * `<kind>/:name/rotate-key`. Each kind gives its fields, its write and what its delete must undo.
 */
export interface AccountKind<Schema extends z.ZodObject<{ name: z.ZodType<string> }>> {
  /** The path segment and key prefix, `roleset` or `static-account`. */
  segment: string;
  /** How messages name one, `roleset` or `static account`. */
  noun: string;
  /** The storage key of the account `name` (`records.ts`). */
  keyOf: (name: string) => string;
  fields: Schema;
  summaries: { read: string; create: string; update: string; delete: string; list: string };
  write: (request: Request<z.output<Schema>>) => Promise<undefined>;
  /** The write-ahead items that undo a deleted account's cloud state. */
  undo: (ctx: EngineContext, key: string, item: AccountItem) => WalItem[];
}

/** What names one kind of account: its path segment, its noun in messages, its storage key. */
export type AccountNames = Pick<AccountKind<z.ZodObject<{ name: z.ZodType<string> }>>, 'segment' | 'noun' | 'keyOf'>;

/** The named account's record, for an operation on an account that must exist (a 400 naming it otherwise). */
export async function existingAccount({ noun, keyOf }: AccountNames, request: Request<{ name: string }>) {
  const key = keyOf(request.data.name);
  const item = await loadAccount(request.storage, key);
  if (!item) throw badRequest(`${noun} "${request.data.name}" does not exist`);
  return { key, item };
}

/**
 * The secret type and token scopes a write leaves an account with (`data`'s, else the stored ones): an access-token
 * account needs scopes, a key account takes none (a 400 naming the field otherwise). `tokenScopes` is what is stored.
 */
export function secretSettings(
  data: { secret_type?: AccountValue['secret_type']; token_scopes?: string[] },
  previous: AccountItem | undefined,
  noun: string,
) {
  const secretType = data.secret_type ?? previous?.value.secret_type ?? 'access_token';
  const scopes = data.token_scopes ?? previous?.value.token_scopes ?? [];
  if (secretType === 'access_token' && scopes.length === 0)
    throw badRequest(`"token_scopes" is required for an access_token ${noun}`);
  if (secretType === 'service_account_key' && data.token_scopes && data.token_scopes.length > 0) {
    throw badRequest(`"token_scopes" only applies to access_token ${noun}s`);
  }
  return { secretType, tokenScopes: secretType === 'access_token' ? scopes : [] };
}

/** `<kind>/:name` and the `<kind>s` list. */
export function accountPaths<Schema extends z.ZodObject<{ name: z.ZodType<string> }>>(
  kind: AccountKind<Schema>,
): PathSpec[] {
  const { segment, summaries, keyOf } = kind;
  return [
    path({
      pattern: `${segment}/:name`,
      fields: kind.fields,
      summaries: { read: summaries.read, create: summaries.create, update: summaries.update, delete: summaries.delete },
      exists: async ({ storage, data }) => (await loadAccount(storage, keyOf(data.name))) !== undefined,
      operations: {
        read: async ({ storage, data }) => {
          const item = await loadAccount(storage, keyOf(data.name));
          return item ? { data: accountView(item.value) } : undefined;
        },
        create: kind.write,
        update: kind.write,
        delete: async (request) => {
          const key = keyOf(request.data.name);
          const item = await loadAccount(request.storage, key);
          if (!item) return undefined;
          const ctx = contextOf(request);
          await deleteWithCloud(ctx, key, kind.undo(ctx, key, item));
          return undefined;
        },
      },
    }),
    path({
      pattern: `${segment}s`,
      fields: z.object({}),
      summaries: { list: summaries.list },
      operations: { list: listKeysUnder(`${segment}/`) },
    }),
  ];
}

/** `<kind>/:name/rotate-key`: a new key for an access-token account to mint tokens with. */
export function rotateKeyPath(names: AccountNames, named: z.ZodObject<{ name: z.ZodType<string> }>, summary: string) {
  return path({
    pattern: `${names.segment}/:name/rotate-key`,
    fields: named,
    summaries: { update: summary },
    operations: {
      update: async (request) => {
        const { key, item } = await existingAccount(names, request);
        await rotateTokenKey(contextOf(request), key, `${names.noun} "${request.data.name}"`, item);
        return undefined;
      },
    },
  });
}
