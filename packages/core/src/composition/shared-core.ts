import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type Clock, systemClock } from '../lib/clock.ts';
import { jsonLogger, type Logger } from '../lib/log.ts';
import { type EpochDomain, ItemMac } from '../storage/item-mac.ts';
import { Keyring, type KeySource } from '../storage/keyring.ts';
import { keyringKind, keyringPk, keyringSk } from '../storage/keyring-item.ts';
import { ConditionFailed, DynamoStore, type Store } from '../storage/store.ts';

/**
 * What both services run on: the table, its keyring, the clock and the log. The scheduler needs nothing more
 * (`scheduler/composition/secret-hashes.ts`); the secrets service's core (`secrets-core.ts`) builds its mounts, policies, tokens, leases
 * and audit on it. Apart from `secrets-core.ts`, so that the scheduler's functions bundle none of the secrets service.
 */
export interface CoreBase {
  store: Store;
  keyring: Keyring;
  clock: Clock;
  log: Logger;
}

/** Where the state is kept: a table on DynamoDB, or a store given whole (`MemoryStore` for tests that do not test DynamoDB). */
export type CoreStorage =
  | { dynamodb: DynamoDBClient; tableName: string; store?: undefined }
  | { store: Store; dynamodb?: undefined; tableName?: undefined };

export type CoreBaseOptions = CoreStorage & {
  keySource: KeySource;
  clock?: Clock;
  log?: Logger;
  /**
   * The epochs read at creation (`StoreBase.readEpoch`): the secrets service's `init` (the keyring's item), the
   * scheduler's `bootstrap` (its marker, in the scheduler's partition, which the secrets functions may not read);
   * both when unsaid. A domain not read here is read when first needed (`settleEpoch`).
   */
  epochs?: EpochDomain[];
};

/**
 * The store, and the keyring loaded from it (its wrapped data key made on first use); tokens, policies, mounts and
 * auth configuration are MACed under the keyring and checked on every read from here on.
 */
export async function createCoreBase(options: CoreBaseOptions): Promise<CoreBase> {
  const store: Store = options.store ?? new DynamoStore(options.dynamodb, options.tableName);
  const log = options.log ?? jsonLogger();
  const keyring = await Keyring.load(options.keySource, {
    get: async () => (await store.get(keyringPk, keyringSk))?.wrapped as Uint8Array | undefined,
    putIfAbsent: async (wrapped, made) => {
      try {
        const item = new ItemMac(made, log).sign(keyringKind, { pk: keyringPk, sk: keyringSk, wrapped });
        await store.put(item, { when: { absent: true } });
        return true;
      } catch (error) {
        if (error instanceof ConditionFailed) return false;
        throw error;
      }
    },
  });
  store.authenticateWith(keyring, log);
  for (const domain of options.epochs ?? ['init', 'bootstrap']) await store.readEpoch(domain);
  return { store, keyring, clock: options.clock ?? systemClock, log };
}
