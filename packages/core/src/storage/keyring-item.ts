/**
 * The keyring's own item: `sys`/`keyring` holds the data key wrapped (by KMS or the local key file; an AEAD, so a
 * changed `wrapped` does not unwrap at all) and, once the secrets service is initialised, `initializedAt`. It carries
 * a MAC of kind `keyring` (`item-mac.ts`) from the moment it is made, so the one thing a table writer could change
 * without breaking the wrapping, the initialisation stamp, cannot be removed without the MAC failing: a deleted
 * `sys/init` marker is caught by the stamp (`secrets/sys/init.ts`). Initialising also records `initEpoch`, which the
 * MACs of the secrets service's other kinds bind (`ItemKind.epoch`, read by `StoreBase.readEpoch`).
 */
import { itemKind } from './item-mac.ts';

export const keyringPk = 'sys';
export const keyringSk = 'keyring';
export const keyringKind = itemKind('keyring');
