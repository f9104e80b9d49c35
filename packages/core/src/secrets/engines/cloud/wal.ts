import type { WalRollback } from '../../framework/backend.ts';
import { rollBackNow, walRecord, walWrites, writeAhead as writeRecords } from '../../framework/write-ahead.ts';
import type { MountWrite } from '../../mounts/mount-storage.ts';
import { type Bindings, revokeBindings, subtractBindings } from './bindings.ts';
import { configKey, loadConfig, openCredentials } from './config.ts';
import type { EngineContext } from './engine-context.ts';
import { type GoogleClient, isNotFound } from './google-client.ts';
import { type AccountItem, keyLeasePrefixes, loadAccount, type WalItem } from './records.ts';
import { rootClient } from './root-client.ts';

/**
 * Crash safety, through the framework's write-ahead records (`secrets/framework/write-ahead.ts`). Before the engine
 * creates a cloud resource it records it; when it replaces one, the record of the old one is written in the same
 * transaction that stores the replacement. A record is settled (`settle`: the resource removed unless the owner's
 * stored record uses it) inline once the request no longer needs it, and otherwise by the engine's job once due
 * (`cloudRollback`, the backend's `walRollback`): after a crash, a timeout or a cloud failure.
 */

/** How long a request may still be working with a resource it recorded ahead (the job leaves it alone until then). */
export const inFlightSeconds = 300;

/**
 * How far Google's clock (a key's `validAfterTime`, in whole seconds) may be from ours; both keep to NTP. Kept
 * small: a key made on the account just before the window, by someone else, must not look like ours.
 */
const clockSlack = 10;

/**
 * When a `leased-key` record falls due: once every request that could have made a key in its window (up to
 * `inFlightSeconds` after it started, give or take `clockSlack`) is over too, so a key no lease holds is an orphan.
 */
export const leasedKeyDelay = 2 * (inFlightSeconds + clockSlack);

export type WalDraft = Pick<WalItem, 'kind' | 'owner' | 'email'> &
  Partial<Pick<WalItem, 'bindings' | 'keyName' | 'knownBefore'>>;

/** Builds the stored record; `due` now for removals, else in that many seconds (resources about to be created). */
export function walItem(ctx: EngineContext, draft: WalDraft, due: 'now' | number): WalItem {
  const { kind, ...data } = draft;
  return walRecord(ctx.system.clock, kind, data, due) as WalItem;
}

/** Records resources about to be created; returns the records (to drop on commit or settle on failure). */
export async function writeAhead(ctx: EngineContext, drafts: WalDraft[], dueIn = inFlightSeconds): Promise<WalItem[]> {
  const items = drafts.map((draft) => walItem(ctx, draft, dueIn));
  await writeRecords(ctx, items);
  return items;
}

/** Settles records now, best effort: a failure leaves the record for the job. */
export async function settleNow(ctx: EngineContext, items: WalItem[], google?: GoogleClient): Promise<void> {
  let client = google;
  await rollBackNow(
    ctx,
    items,
    async (item) => {
      client ??= await rootClient(ctx);
      await settle(ctx, client, item);
    },
    'cloud clean-up',
  );
}

/** The engine's rollback of a record (the framework runs it for due records): one root client per mount. */
export const cloudRollback: WalRollback = {
  forMount(ctx) {
    let google: GoogleClient | undefined;
    return async (record) => {
      google ??= await rootClient(ctx);
      await settle(ctx, google, record as unknown as WalItem);
    };
  },
};

async function ownerState(
  ctx: EngineContext,
  owner: string,
): Promise<{ email?: string; bindings: Bindings; keyNames: string[] }> {
  if (owner === configKey) {
    const credentials = openCredentials(ctx.storage, await loadConfig(ctx.storage));
    return {
      email: credentials?.client_email,
      bindings: {},
      keyNames: credentials
        ? [`projects/-/serviceAccounts/${credentials.client_email}/keys/${credentials.private_key_id}`]
        : [],
    };
  }
  const item: AccountItem | undefined = await loadAccount(ctx.storage, owner);
  if (!item) return { bindings: {}, keyNames: [] };
  return {
    email: item.value.service_account_email,
    bindings: item.value.bindings,
    keyNames: item.tokenKey ? [item.tokenKey.name] : [],
  };
}

const keyId = (name: string) => name.slice(name.lastIndexOf('/') + 1);

/** Ids of the keys the owner's leases hold (revoking a lease deletes its key). */
async function leasedKeyIds(ctx: EngineContext, owner: string): Promise<Set<string>> {
  const held = await Promise.all(keyLeasePrefixes(owner).map((prefix) => ctx.system.leases.internalsUnder(prefix)));
  return new Set(held.flat().map((internal) => keyId(String(internal.keyName))));
}

/** Keys made on the account while the recorded request ran, for a record Google's answer never reached. */
async function keysMadeDuring(google: GoogleClient, item: WalItem): Promise<string[]> {
  try {
    const keys = await google.listKeys(item.email);
    return keys
      .filter((key) => {
        const created = Date.parse(key.validAfterTime ?? '') / 1000;
        return created >= item.startedAt - clockSlack && created <= item.startedAt + inFlightSeconds + clockSlack;
      })
      .map((key) => key.name);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}

/** Removes what the record names unless the owner's stored record now uses it. Idempotent. */
export async function settle(ctx: EngineContext, google: GoogleClient, item: WalItem): Promise<void> {
  const owner = await ownerState(ctx, item.owner);
  const ownerUses = owner.email === item.email;
  const currentKeys = new Set(ownerUses ? owner.keyNames.map(keyId) : []);
  switch (item.kind) {
    case 'account':
      // Bindings go first: once the account is deleted Google only shows its members as `deleted:…`.
      if (ownerUses) return;
      await revokeBindings(google, `serviceAccount:${item.email}`, item.bindings ?? {});
      await google.deleteServiceAccount(item.email);
      return;
    case 'bindings':
      await revokeBindings(
        google,
        `serviceAccount:${item.email}`,
        subtractBindings(item.bindings ?? {}, ownerUses ? owner.bindings : {}),
      );
      return;
    case 'key':
      if (item.keyName && !currentKeys.has(keyId(item.keyName))) await google.deleteKey(item.keyName);
      return;
    case 'leased-key': {
      const held = await leasedKeyIds(ctx, item.owner);
      for (const name of item.keyName ? [item.keyName] : await keysMadeDuring(google, item)) {
        if (!held.has(keyId(name)) && !currentKeys.has(keyId(name))) await google.deleteKey(name);
      }
      return;
    }
    case 'new-keys': {
      let keys: Array<{ name: string; validAfterTime?: string }>;
      try {
        keys = await google.listKeys(item.email);
      } catch (error) {
        if (isNotFound(error)) return;
        throw error;
      }
      const known = new Set((item.knownBefore ?? []).map(keyId));
      for (const key of keys) {
        const created = key.validAfterTime ? Date.parse(key.validAfterTime) / 1000 : Number.POSITIVE_INFINITY;
        // Only keys made while the recorded request ran: older ones (and any not created by us) are left alone.
        if (known.has(keyId(key.name)) || currentKeys.has(keyId(key.name)) || created < item.startedAt - 120) continue;
        await google.deleteKey(key.name);
      }
      return;
    }
  }
}

/** The writes that drop the records ahead (their resources are now the stored record's) and record the obsolete ones. */
export const switchWrites = (ahead: WalItem[], obsolete: WalItem[]): MountWrite[] => walWrites(ahead, obsolete);
