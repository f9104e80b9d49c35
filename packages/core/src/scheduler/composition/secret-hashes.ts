import type { CoreBase } from '../../composition/shared-core.ts';

/**
 * What the scheduler runs on: the table, the keyring, the clock and the log (`composition/shared-core.ts`, which the secrets
 * service's core builds on too). Apart from `scheduler-core.ts`, so that the sweep job (`scheduler/sweep.ts`) can hash token secrets
 * without importing the scheduler's HTTP surface (login, binding-rule selectors and the regular-expression engine
 * they load).
 */
export type SchedulerBase = CoreBase;

/** The hash an ACL token's secret is stored and looked up by (keyed, so a table dump reveals no secret). */
export const schedulerSecretHash = (core: SchedulerBase, secret: string) => core.keyring.hash(`scheduler:${secret}`);

/**
 * The hash a cluster node's SecretID is stored and compared by: keyed, apart from ACL tokens' hashes, and bound to
 * the node's ID, so a beat item moved onto another node's key matches no secret there.
 */
export const nodeSecretHash = (core: SchedulerBase, id: string, secret: string) =>
  core.keyring.hash(`scheduler-node:${id}:${secret}`);
