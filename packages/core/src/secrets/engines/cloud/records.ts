import { itemKind } from '../../../storage/item-mac.ts';
import type { MountItemKinds, MountStorage } from '../../mounts/mount-storage.ts';
import type { Bindings } from './bindings.ts';
import type { CredentialsFile } from './google-client.ts';

/**
 * How rolesets (`roleset/<name>`) and static accounts (`static-account/<name>`) are kept: one item each, the
 * fields the API shows in `value`, the key the engine mints access tokens with sealed beside them.
 */
export interface AccountValue {
  secret_type: 'access_token' | 'service_account_key';
  service_account_email: string;
  service_account_project: string;
  bindings: Bindings;
  token_scopes: string[];
  /** Bumped whenever the account or its bindings change; keys issued under an older one cannot be renewed. */
  generation: number;
}

export interface AccountItem {
  /** Its storage key: `roleset/<name>` or `static-account/<name>`. */
  sk: string;
  value: AccountValue;
  /** The access-token key: its full resource name and the sealed credentials file. */
  tokenKey?: { name: string; sealed: string };
}

export const rolesetKey = (name: string) => `roleset/${name}`;
export const staticAccountKey = (name: string) => `static-account/${name}`;
export const impersonatedKey = (name: string) => `impersonated-account/${name}`;
/** Where, under the mount's path, the leases of an account's keys are: one prefix per key path (keys.ts). */
export const keyLeasePrefixes = (owner: string) =>
  owner.startsWith('roleset/') ? [`${owner}/key/`, `key/${owner.slice('roleset/'.length)}/`] : [`${owner}/key/`];

export async function loadAccount(storage: MountStorage, key: string): Promise<AccountItem | undefined> {
  return storage.getItem<Omit<AccountItem, 'sk'>>(key);
}

/** A stored record's attributes besides its key (`sk`, and `pk` as read), for writing it back through the mount's storage. */
export function attributesOf<T extends { sk: string }>(record: T): Record<string, unknown> {
  const { sk: _sk, pk: _pk, ...attributes } = record as { sk: string; pk?: string };
  return attributes;
}

export function openTokenKey(storage: MountStorage, item: AccountItem): CredentialsFile | undefined {
  return item.tokenKey
    ? (JSON.parse(storage.open(`${item.sk}#token-key`, item.tokenKey.sealed)) as CredentialsFile)
    : undefined;
}

export const sealTokenKey = (storage: MountStorage, key: string, credentials: string) =>
  storage.seal(`${key}#token-key`, credentials);

/** The read result shared by rolesets and static accounts. */
export function accountView(value: AccountValue): Record<string, unknown> {
  return {
    secret_type: value.secret_type,
    service_account_email: value.service_account_email,
    service_account_project: value.service_account_project,
    bindings: value.bindings,
    ...(value.secret_type === 'access_token' ? { token_scopes: value.token_scopes } : { token_scopes: [] }),
  };
}

/**
 * A write-ahead record (`wal/<id>`): a cloud resource that was created, or is to be removed, for `owner`.
 * The clean-up job settles it when due: whatever the owner's stored record does not use is removed.
 *  - `account`: a service account with the bindings it may have (all removed unless it is the owner's account);
 *  - `bindings`: roles granted to `email` (revoked except those the owner's record still grants that account);
 *  - `new-keys`: keys created on `email` after `startedAt` whose names were not learnt (deleted unless current);
 *  - `key`: one key by name (deleted unless it is the owner's current token key or root key);
 *  - `leased-key`: a key issued to be leased, `keyName` once Google named it (deleted unless a lease holds it);
 *    unnamed, any key made on `email` while the request ran that no lease holds.
 */
export interface WalItem {
  /** Its storage key, `wal/<due-ordered id>`. */
  sk: string;
  kind: 'account' | 'bindings' | 'new-keys' | 'key' | 'leased-key';
  /** Storage key of the roleset, static account or `config` the resource belongs to. */
  owner: string;
  email: string;
  bindings?: Bindings;
  keyName?: string;
  knownBefore?: string[];
  startedAt: number;
  dueAt: number;
  attempts: number;
}

export { walPrefix } from '../../framework/write-ahead.ts';

/**
 * The engine's items that carry a MAC (`storage/item-mac.ts`; the backend's `authenticatedItems`): the configuration
 * (its sealed root credentials included: removed, the engine would fall back to the server's own credentials),
 * rolesets, static and impersonated accounts. The MAC covers everything but when the next automatic root rotation is
 * due and when the last was, so a forged binding, account email, project or federation target is refused.
 */
export const cloudItemKind = itemKind('cloud-item', ['rotateAt', 'lastRotation'], { epoch: 'init' });

/** The keys of the engine's authenticated items (the item-kind table's row for them matches the same). */
export const cloudItemKeys = /^(config|roleset\/.*|static-account\/.*|impersonated-account\/.*|key\/.*)$/;

export const cloudItemKinds: MountItemKinds = (key) => (cloudItemKeys.test(key) ? cloudItemKind : undefined);
