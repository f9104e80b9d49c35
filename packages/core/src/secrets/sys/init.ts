import { randomBytes } from 'node:crypto';
import { badRequest, unavailable } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { itemKind } from '../../storage/item-mac.ts';
import { keyringKind, keyringPk, keyringSk } from '../../storage/keyring-item.ts';
import { ConditionFailed, type Item, type Store } from '../../storage/store.ts';
import { systemMaxTtl, tokenStoreMount } from '../mounts/mount-table.ts';
import type { BuiltinServices } from './builtin.ts';

/** The marker that the service was initialised (`sys/init`: when), authenticated: its `initializedAt` and its key. */
export const initMarkerPk = 'sys';
export const initMarkerSk = 'init';
export const initMarkerKind = itemKind('init-marker');

/** What the table says about initialisation. `tampered` holds why a missing marker is not believed. */
export type Initialisation = { state: 'fresh' } | { state: 'initialized' } | { state: 'tampered'; reason: string };

/**
 * Whether the service was initialised, never believing a missing marker alone (storage is untrusted: a table writer
 * can delete `sys/init`, or give it an `expiresAt` for the table's TTL to delete). The marker's absence means "fresh"
 * only when the keyring's item is there, verifies, and carries no initialisation stamp: initialising stamps it in the
 * marker's own transaction, and the stamp cannot be removed without the keyring item's MAC failing.
 */
export async function initialisation(store: Store): Promise<Initialisation> {
  const [marker, keyringItem] = await Promise.all([
    store.get(initMarkerPk, initMarkerSk),
    store.get(keyringPk, keyringSk),
  ]);
  // A marker refuses a second initialisation whatever it holds; one that fails its MAC is logged by `verified`.
  if (marker) {
    store.verified(initMarkerKind, marker);
    return { state: 'initialized' };
  }
  if (!keyringItem) return { state: 'tampered', reason: "the keyring's item is gone from the table" };
  if (!store.verified(keyringKind, keyringItem))
    return {
      state: 'tampered',
      reason:
        "the keyring's item failed its integrity check (altered, or written before it carried a MAC: an operator signs such a table with functions/deploy/sign-items.ts)",
    };
  if (keyringItem.initializedAt !== undefined)
    return {
      state: 'tampered',
      reason: `the keyring records an initialisation at ${String(keyringItem.initializedAt)}`,
    };
  return { state: 'fresh' };
}

/**
 * `initialized` of `sys/health`, `sys/init` and `sys/seal-status`: true unless the table is fresh (a table whose marker
 * is missing while the rest says otherwise is not offered for initialisation).
 */
export const isInitialized = async (services: Pick<BuiltinServices, 'store'>): Promise<boolean> =>
  (await initialisation(services.store)).state !== 'fresh';

/** The verified marker's time of initialisation (what `sys/health`'s cluster id is derived from). */
export async function initializedAt(store: Store): Promise<number | undefined> {
  const marker = await store.getVerified(initMarkerKind, initMarkerPk, initMarkerSk);
  return marker?.initializedAt as number | undefined;
}

/** The refusal of an initialisation over a table that was initialised before: logged, and a 503 that says why. */
function refuseTampered(log: Logger, reason: string): never {
  log.error('storage integrity: refused to initialise again over a table that was initialised', {
    marker: `${initMarkerPk}/${initMarkerSk}`,
    reason,
  });
  throw unavailable(
    `initialisation refused: the init marker is missing from storage but ${reason}; it was deleted or expired outside the service (tampering), so no new root token is made. Restore the table from a backup`,
  );
}

/**
 * One-time initialisation: mints the first root token, and in one transaction writes the marker and stamps the
 * keyring's item with the time (both conditional, so of two racing callers exactly one gets a token; the loser's token
 * is revoked). Over a table whose marker is missing but which was initialised, refuses (see `initialisation`).
 */
export async function initialize(
  services: Pick<BuiltinServices, 'store' | 'clock' | 'tokens' | 'log'> &
    Partial<Pick<BuiltinServices, 'mounts' | 'policies' | 'audit'>>,
  rootTokenId?: string,
): Promise<string> {
  const { store } = services;
  const before = await initialisation(store);
  if (before.state === 'tampered') refuseTampered(services.log, before.reason);
  if (before.state === 'initialized') throw badRequest('already initialized');
  const keyringItem = (await store.get(keyringPk, keyringSk)) as Item;
  // This initialisation's epoch: every token, policy, mount and engine item signed from now on binds it (ItemKind.epoch),
  // so whatever an earlier initialisation signed (put back by a table writer who replayed the keyring's item from
  // before it) never verifies, as Vault's re-init makes new barrier keys.
  const epoch = randomBytes(16).toString('base64url');
  store.useInitEpoch(epoch);
  let made: Awaited<ReturnType<typeof services.tokens.create>>;
  try {
    made = await services.tokens.create({
      policies: ['root'],
      noDefaultPolicy: true,
      displayName: 'root',
      meta: {},
      ttl: 0,
      explicitMaxTtl: 0,
      period: 0,
      numUses: 0,
      renewable: false,
      type: 'service',
      path: 'auth/token/root',
      issuer: tokenStoreMount,
      creator: 'initialisation',
      entityId: '',
      boundCidrs: [],
      parent: undefined,
      mountDefaultTtl: systemMaxTtl,
      mountMaxTtl: systemMaxTtl,
      ...(rootTokenId ? { id: rootTokenId } : {}),
    });
  } catch (error) {
    store.useInitEpoch(undefined);
    throw error;
  }
  const { token, entry } = made;
  const initializedAt = services.clock.now();
  try {
    await store.transact([
      {
        put: store.signed(initMarkerKind, { pk: initMarkerPk, sk: initMarkerSk, initializedAt }),
        when: { absent: true },
      },
      {
        put: store.signed(keyringKind, {
          pk: keyringPk,
          sk: keyringSk,
          wrapped: keyringItem.wrapped,
          initializedAt,
          initEpoch: epoch,
        }),
        when: { equals: { mac: keyringItem.mac }, missing: ['initializedAt'] },
      },
    ]);
  } catch (error) {
    if (!(error instanceof ConditionFailed)) {
      store.useInitEpoch(undefined);
      throw error;
    }
    // Another process initialised first: this token (signed under this epoch) goes, and its epoch is taken.
    await services.tokens.revoke(entry.hash);
    store.useInitEpoch(undefined);
    await store.readEpoch();
    const after = await initialisation(store);
    if (after.state === 'tampered') refuseTampered(services.log, after.reason);
    throw badRequest('already initialized');
  }
  // What this process cached was verified under the epoch before (a re-initialisation over a replayed keyring item).
  services.mounts?.forget();
  services.policies?.invalidate();
  services.audit?.devices.invalidate();
  return token;
}
