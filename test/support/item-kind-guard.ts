import { type ItemKindRow, itemKindOf } from '../../packages/core/src/item-kinds.ts';
import { allSecretsFamilies, backendsOf } from '../../packages/core/src/secrets/families.ts';
import { upstreamPk as recordingUpstreamPk } from './recording-backend.ts';
import type { Item, Key, Store, Write } from '../../packages/core/src/storage/store.ts';

/** Every put and update of `store` (what can bring a kind of item into the table) passes its key, and a put its item, to `seen` first. */
export function watchWrites(store: Store, seen: (key: Key, item?: Item) => void): void {
  const put = store.put.bind(store);
  const update = store.update.bind(store);
  const transact = store.transact.bind(store);
  store.put = (item, options) => {
    seen(item, item);
    return put(item, options);
  };
  store.update = ((key, change, options) => {
    seen(key);
    return update(key, change, options);
  }) as Store['update'];
  store.transact = (writes: Write[]) => {
    for (const write of writes) {
      if ('put' in write) seen(write.put, write.put);
      else if ('update' in write) seen(write.update);
    }
    return transact(writes);
  };
}

/** The builtin mounts' storage partitions (`mount#<uuid>`), which no mount item names. */
const builtinTypes: Record<string, string> = { system: 'system', identity: 'identity', token: 'token' };
/** The types the services mount; a test's own fixture backend (`extraBackends`) writes what it likes. */
const productTypes = new Set([
  ...Object.values(builtinTypes),
  ...backendsOf(allSecretsFamilies).map((backend) => backend.type),
]);

const mountTypesOf = new WeakMap<Store, Map<string, string>>();

/**
 * Classifies every write of `store` by the item-kind table (`packages/core/src/item-kinds.ts`): a write whose key no
 * row matches throws, naming the key, so no test can write a new kind of item without a row there (and in
 * docs/security.md). The mounts' types are learnt from the mount items written through the same store.
 */
export function guardItemKinds(store: Store, classified?: (row: ItemKindRow, key: Key, item?: Item) => void): void {
  // Shared by every guard of one store: a guard added later still knows the mounts written before it.
  let types = mountTypesOf.get(store);
  if (!types) {
    types = new Map(Object.entries(builtinTypes));
    mountTypesOf.set(store, types);
  }
  const known = types;
  watchWrites(store, (key, item) => {
    if (key.pk === 'mounts' && item) {
      const entry = item.entry as { uuid?: unknown; type?: unknown } | undefined;
      if (typeof entry?.uuid === 'string' && typeof entry.type === 'string') known.set(entry.uuid, entry.type);
    }
    // The recording fixture keeps its fake upstream's journal in the table: the fixture's, not the services'.
    if (key.pk === recordingUpstreamPk) return;
    const mountType = key.pk.startsWith('mount#') ? known.get(key.pk.slice('mount#'.length)) : undefined;
    if (mountType !== undefined && !productTypes.has(mountType)) return;
    const row = itemKindOf(key.pk, key.sk, (uuid) => known.get(uuid));
    if (!row)
      throw new Error(
        `a write of a kind of item no row of packages/core/src/item-kinds.ts names: ${key.pk} / ${key.sk}` +
          (key.pk.startsWith('mount#') ? ` (a mount of type ${mountType ?? 'unknown'})` : '') +
          '. Decide its protection and add a row there and in the item-kind table of docs/security.md',
      );
    classified?.(row, key, item);
  });
}
