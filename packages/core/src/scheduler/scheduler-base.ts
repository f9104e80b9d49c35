import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/log.ts';
import type { Keyring } from '../storage/keyring.ts';
import type { Store } from '../storage/store.ts';

/**
 * What the scheduler runs on: the table, the keyring, the clock and the log. Apart from `scheduler.ts`, so that the
 * sweep job (`sweep.ts`) can hash token secrets without importing the scheduler's HTTP surface (login, binding-rule
 * selectors and the regular-expression engine they load).
 */
export interface SchedulerBase {
  store: Store;
  keyring: Keyring;
  clock: Clock;
  log: Logger;
}

/** The hash an ACL token's secret is stored and looked up by (keyed, so a table dump reveals no secret). */
export const schedulerSecretHash = (core: SchedulerBase, secret: string) => core.keyring.hash(`scheduler:${secret}`);
