import type { ItemKind } from './item-mac.ts';

/** How an item kind is protected against a table writer (the protections: `item-kinds.ts`). */
export type Protection = 'MAC' | 'sealed' | 'link' | 'not security state' | 'unprotected';

/** One kind of item the services write, with its protection: a row of `item-kinds.ts` and of docs/security.md. */
export interface ItemKindRow {
  /** The row's name in docs/security.md. */
  name: string;
  /** Where its items are, as the docs write it. */
  where: string;
  pk: RegExp;
  sk: RegExp;
  /** For a mount's own storage (`mount#<uuid>`): the mount types whose backends write it. */
  mountTypes?: readonly string[];
  protection: Protection;
  /** The MAC's kind, for `MAC` rows. */
  mac?: ItemKind;
  /** State that expires within minutes: `sign-items` leaves a MAC-less one alone (it is started again). */
  shortLived?: true;
  why: string;
}

/**
 * A kind of item an engine keeps in its mounts' storage (`mount#<uuid>`), as its backend declares it
 * (`Backend.storedItems`): the row of `item-kinds.ts` for the engine's mount type, by the item's sort key.
 */
export type StoredItemKind = Omit<ItemKindRow, 'pk' | 'mountTypes'>;
