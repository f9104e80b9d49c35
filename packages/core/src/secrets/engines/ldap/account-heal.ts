import { InvalidCredentialsError } from 'ldapts';
import { epochSeconds } from '../../../lib/clock.ts';
import { upstreamFailure } from '../../../lib/errors.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import { canBind, DirectoryError, withDirectory } from './client.ts';
import type { DirectoryConfig } from './config-model.ts';
import type { LdapEngineContext } from './context.ts';
import { accountKey } from './library-model.ts';
import { normalizeDn } from './managed-accounts.ts';
import type { LdapAccountItem } from './records.ts';
import { staticChange, staticRoleKeyPrefix } from './static-rotation.ts';
import { ChangedConcurrently, changePassword, type PasswordChange, RotationInProgress } from './write-ahead.ts';

/**
 * Healing a managed account (a static role or a library account) whose stored password the directory no longer takes:
 * the table lost a rotation the directory kept (a store that dropped an acknowledged write, a restored table, a
 * promoted replica that missed the last seconds). The account is rotated again with the engine's root credential
 * through the normal write-ahead path (`changePassword`), and the heal is recorded on the item (`lastHealed`,
 * `healCount`, `lastHealReason`), in the server log and in the audit devices.
 *
 * Bounded on purpose: one heal attempt per account per `healCooldownSeconds` across every process (a conditional
 * write of `healAttemptAt`), and only an account whose DN the service itself sealed into the item (`sealedDn`), so
 * neither a client reading a dead password again and again nor a table writer forging an item can make it rotate in
 * a loop, or rotate an entry it does not manage. When the root credential does not bind either, nothing can be healed:
 * that is reported (log and audit) once per attempt, never retried sooner.
 */

/** Why an account was checked. */
export type HealReason = 'start check' | 'scheduled check' | 'read' | 'check-out';

export type HealOutcome =
  /** Rotated: the directory and the table hold the same new password. */
  | 'healed'
  /** Someone changed the password meanwhile (a rotation, another heal): nothing to do here. */
  | 'changed'
  /** Another heal of the account was tried less than `healCooldownSeconds` ago. */
  | 'cooling'
  /** The item carries no DN sealed by the service: not provably an account it manages. */
  | 'unproven'
  /** The root credential does not bind either: reported, not healed. */
  | 'root-refused';

/** The least time between two heal attempts of one account, whoever asks. */
export const healCooldownSeconds = 60;

/** What `sealedDn` holds, sealed under the item's key. */
const dnProof = (dn: string) => `dn:${normalizeDn(dn)}`;

/** The `sealedDn` of an account at `key` whose entry is `dn` (written wherever the service creates the account). */
export const sealDn = (context: LdapEngineContext, key: string, dn: string) => context.storage.seal(key, dnProof(dn));

const dnOf = (item: LdapAccountItem) => (item.value as { dn?: unknown }).dn;

/** Whether the item's DN is the one the service sealed into it. */
function provenDn(context: LdapEngineContext, item: LdapAccountItem): boolean {
  const dn = dnOf(item);
  if (typeof dn !== 'string' || !item.sealedDn) return false;
  try {
    return context.storage.open(item.sk, item.sealedDn) === dnProof(dn);
  } catch {
    return false;
  }
}

/** `static role "bob"`, `library account "svc-1"`: how logs and errors name the account. */
export function accountLabel(key: string): string {
  if (key.startsWith(staticRoleKeyPrefix)) return `static role "${key.slice(staticRoleKeyPrefix.length)}"`;
  if (key.startsWith(accountKey(''))) return `library account "${key.slice(accountKey('').length)}"`;
  return `"${key}"`;
}

/**
 * Whether the directory takes the stored password: `binds`, `dead`, or `skip` for an item with a change in flight
 * (its write-ahead settles it) or no password yet. One bind. An item that binds and lacks its sealed DN gets it now:
 * a password the service sealed binding at that DN proves the DN is the one the service wrote.
 */
export async function verifyStored(
  context: LdapEngineContext,
  config: DirectoryConfig,
  item: LdapAccountItem,
): Promise<'binds' | 'dead' | 'skip'> {
  const dn = dnOf(item);
  if (item.pending || !item.password || typeof dn !== 'string') return 'skip';
  let stored: string;
  try {
    stored = context.storage.open(item.sk, item.password);
  } catch {
    // Not sealed here by the service (moved from another item, or forged): no password of ours, so a dead one.
    return 'dead';
  }
  const binds = await canBind(config, dn, stored);
  if (binds && !provenDn(context, item))
    await context.storage
      .update(
        item.sk,
        { set: { sealedDn: sealDn(context, item.sk, dn) } },
        { when: { equals: { password: item.password } } },
      )
      .catch(ignoreConditionFailed);
  return binds ? 'binds' : 'dead';
}

/**
 * Heals an account found with a dead password (`item` as it was read when found so): rotates it with the root
 * credential if it still holds that password and no heal was tried within the cool-down. Throws only when the
 * directory cannot be reached (or refuses the new password), for the caller to retry later.
 */
export async function healAccount(
  context: LdapEngineContext,
  config: DirectoryConfig,
  item: LdapAccountItem,
  reason: HealReason,
): Promise<HealOutcome> {
  const { storage, system } = context;
  const key = item.sk;
  const label = accountLabel(key);
  const dn = dnOf(item) as string;
  const now = epochSeconds(system.clock);
  if (!provenDn(context, item)) {
    system.log.error('not healing an account whose DN the service did not seal; rotate it by hand if it is ours', {
      key,
      reason,
    });
    await system.recordEvent({
      operation: 'update',
      path: `heal/${key}`,
      data: { account: key, reason, outcome: 'unproven' },
      summary: `${label}: its stored password does not bind and its DN is not one the service sealed; not healed`,
    });
    return 'unproven';
  }
  // The attempt, claimed for every process at once: only while the item still holds the dead password.
  try {
    await storage.update(
      key,
      { set: { healAttemptAt: now } },
      {
        when: {
          all: [
            { equals: { password: item.password } },
            { missing: ['pending'] },
            { any: [{ missing: ['healAttemptAt'] }, { atMost: { healAttemptAt: now - healCooldownSeconds } }] },
          ],
        },
      },
    );
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    const current = await storage.getItem<LdapAccountItem>(key);
    return current && current.password === item.password && !current.pending ? 'cooling' : 'changed';
  }
  if (!(await rootBinds(config))) {
    system.log.error('cannot heal: the root credential does not bind either; rewrite ldap/config with a working one', {
      key,
      reason,
    });
    await system.recordEvent({
      operation: 'update',
      path: `heal/${key}`,
      data: { account: key, reason, outcome: 'root-refused' },
      summary: `${label}: its stored password does not bind, and neither does the root credential; not healed`,
    });
    return 'root-refused';
  }
  const healCount = (item.healCount ?? 0) + 1;
  const change: PasswordChange = {
    ...(key.startsWith(staticRoleKeyPrefix)
      ? staticChange(context, key.slice(staticRoleKeyPrefix.length), item, config)
      : { context, key, dn, config }),
    // Only the password: a library account stays checked out (or available) under the same check-out and lease.
    condition: { equals: { password: item.password } },
    record: { set: { lastHealed: now, healCount, lastHealReason: reason } },
  };
  try {
    await changePassword(change);
  } catch (error) {
    if (error instanceof ChangedConcurrently || error instanceof RotationInProgress) return 'changed';
    throw error;
  }
  system.log.info('healed a password the directory no longer took', { key, dn, reason, healCount });
  await system.recordEvent({
    operation: 'update',
    path: `heal/${key}`,
    data: { account: key, reason, outcome: 'healed' },
    summary: `${label}: its stored password did not bind (${reason}); rotated with the root credential`,
  });
  return 'healed';
}

/**
 * What a read of the account shows of its heals, beside Vault's fields (ours, so named apart from Vault's
 * `last_vault_rotation`-style fields): when it was last healed (or null), how often, and why the last time.
 */
export function healFields(item: LdapAccountItem) {
  return {
    last_healed: item.lastHealed ? new Date(item.lastHealed * 1000).toISOString() : null,
    heal_count: item.healCount ?? 0,
    last_heal_reason: item.lastHealReason ?? null,
  };
}

/** Whether the root credential binds: false on invalid credentials; throws when the directory cannot be reached. */
async function rootBinds(config: DirectoryConfig): Promise<boolean> {
  try {
    return await withDirectory(config, async () => true);
  } catch (error) {
    if (error instanceof DirectoryError && error.code === new InvalidCredentialsError().code) return false;
    throw error;
  }
}

/**
 * Verified passwords, per process: a read or check-out binds once per stored value (sealed, so a new password is a
 * new entry) and `verifiedSeconds`, not on every request. A dead one is remembered as long, so a client asking again
 * and again costs no further bind until the entry ends (and the heal's cool-down bounds the rotations).
 */
const verified = new Map<string, { until: number; binds: boolean }>();
/** How long a verification stands for reads in this process. */
export const verifiedSeconds = 30;
const verifiedLimit = 10_000;

/**
 * What a read or check-out answers from: `item` when its stored password binds (verified at most once per
 * `verifiedSeconds` in this process), the healed item when it did not, and a 502 naming the account when it could not
 * be healed now. An item with a change in flight is returned as it is (its write-ahead decides: `settlePending`).
 */
export async function verifiedForRead(
  context: LdapEngineContext,
  configOf: () => Promise<DirectoryConfig>,
  item: LdapAccountItem,
  reason: HealReason,
): Promise<LdapAccountItem> {
  if (item.pending || !item.password) return item;
  const memo = `${context.partition}|${item.sk}|${item.password}`;
  const now = epochSeconds(context.system.clock);
  const seen = verified.get(memo);
  let binds = seen && seen.until > now ? seen.binds : undefined;
  // The config is read only when a bind is needed.
  let config: DirectoryConfig | undefined;
  if (binds === undefined) {
    config = await configOf();
    let found: Awaited<ReturnType<typeof verifyStored>>;
    try {
      found = await verifyStored(context, config, item);
    } catch (error) {
      // The directory cannot be asked: a dead password cannot be told from a live one, and the stored one is the
      // best answer there is (as before verification; the check heals it later if it was dead).
      if (!(error instanceof DirectoryError)) throw error;
      context.system.log.error('could not verify a stored password; answering it unverified', {
        key: item.sk,
        error: error.message,
      });
      return item;
    }
    if (found === 'skip') return item;
    binds = found === 'binds';
    if (verified.size >= verifiedLimit) verified.clear();
    verified.set(memo, { until: now + verifiedSeconds, binds });
  }
  if (binds) return item;
  const outcome = await healAccount(context, config ?? (await configOf()), item, reason);
  const after = await context.storage.getItem<LdapAccountItem>(item.sk);
  if (after?.password && after.password !== item.password && !after.pending) return after;
  throw upstreamFailure(
    `the directory does not take the stored password of ${accountLabel(item.sk)}, and it could not be healed now (${outcome}); try again later`,
  );
}

function ignoreConditionFailed(error: unknown): void {
  if (!(error instanceof ConditionFailed)) throw error;
}
