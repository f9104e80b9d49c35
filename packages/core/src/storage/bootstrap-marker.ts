/**
 * The scheduler's ACL bootstrap marker (`sched#meta`/`bootstrap`, the scheduler's `META_PK`/`BOOTSTRAP_SK`): written
 * by the bootstrap with the index it was made at and the bootstrap's epoch, which the MACs of the scheduler's ACL
 * kinds bind (`ItemKind.epoch`). Here, beside the keyring's item, because the store reads both epochs
 * (`StoreBase.readEpoch`); the scheduler's token store writes and checks it (`scheduler/acl/tokens/store.ts`).
 */
import { itemKind } from './item-mac.ts';

export const bootstrapMarkerPk = 'sched#meta';
export const bootstrapMarkerSk = 'bootstrap';

/**
 * The bootstrap marker is authenticated (its `index`, its epoch and its key), so a marker cannot be made to look like
 * another; a table writer can still delete it, or give it an `expiresAt` for the table's TTL to delete. Its absence is
 * therefore never believed alone (`AclTokens.bootstrapStatus`).
 */
export const bootstrapMarkerKind = itemKind('scheduler-bootstrap-marker');
