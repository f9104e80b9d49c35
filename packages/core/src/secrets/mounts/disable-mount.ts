import { type Clock, epochSeconds } from '../../lib/clock.ts';
import { upstreamFailure } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { dueKey } from '../../storage/due.ts';
import type { Keyring } from '../../storage/keyring.ts';
import { ConditionFailed, type Store } from '../../storage/store.ts';
import type { LeaseItem, LeaseManager } from '../leases/lease-manager.ts';
import type { TokenStore } from '../tokens/token-store.ts';
import { MountStorage } from './mount-storage.ts';
import type { MountEntry, MountTable } from './mount-table.ts';

/** What disabling a mount uses: the registries, and the backends this process bundles (for their clean-up hooks). */
export interface DisableServices {
  store: Store;
  keyring: Keyring;
  clock: Clock;
  log: Logger;
  mounts: MountTable;
  tokens: TokenStore;
  leases: LeaseManager;
  /** The backends this process bundles, by mount type: only their mounts are wiped here. */
  backends: ReadonlyMap<string, unknown>;
  askEngine?: (mountType: string, request: { finishDisabled: true }) => Promise<boolean>;
}

/**
 * Disables a mount. A process that bundles the mount's backend revokes its leases, runs the backend's clean-up and
 * wipes the mount at once (a lease that cannot be revoked keeps the mount, with a 502). A process that does not
 * (in AWS, the system function) cannot run the hooks: it takes the mount out of service (`disabling`), queues
 * its leases for its engine's job, and that job, which bundles the backend, finishes it (`finishDisabledMounts`).
 * An auth method is always marked first, so its tokens are never left half revoked (`disableAuthMethod`).
 */
export async function disableMount(services: DisableServices, entry: MountEntry): Promise<void> {
  if (entry.table === 'auth') return disableAuthMethod(services, entry);
  if (services.backends.has(entry.type)) {
    await services.leases.revokePrefix(entry.path);
    await wipeMount(services, entry);
    await services.mounts.remove(entry);
    return;
  }
  const marked = await markDisabling(services, entry);
  if (!marked) return;
  // The leases go to the engine (see LeaseManager.revokePrefix), and where the engine's function can be asked
  // (AWS) it finishes the disable now, as Vault answers once the mount is gone; else, or on a failure, its job does.
  try {
    await services.leases.revokePrefix(marked.path);
    await services.askEngine?.(marked.type, { finishDisabled: true });
  } catch (error) {
    services.log.error("disabling a mount is left to its engine's job", {
      mount: marked.path,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/**
 * Disables an auth method in three steps, each safe to repeat: mark it `disabling` (no more logins, its batch tokens
 * refused), revoke every service token it issued with their children and leases, then wipe and remove it. Tokens
 * are revoked here whether or not the backend is bundled: they need no backend. Whatever a crash or a failure
 * leaves after the mark, the sweep finishes (`finishDisabledMounts`), and a failure is still reported, as a 502;
 * until then the service tokens not yet revoked keep working.
 */
async function disableAuthMethod(services: DisableServices, entry: MountEntry): Promise<void> {
  const marked = await markDisabling(services, entry);
  if (!marked) return;
  try {
    if (services.backends.has(marked.type)) await finishDisabled(services, marked);
    else await services.tokens.revokeIssued(marked);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    services.log.error('disabling an auth method failed part-way; the sweep will finish it', {
      mount: marked.path,
      error: message,
    });
    throw upstreamFailure(
      `${marked.path} is disabled, but revoking its tokens or removing it failed; the sweep will finish: ${message}`,
    );
  }
}

/**
 * The sweep's half of a two-phase disable: every `disabling` mount whose tokens (for an auth method) and leases are
 * all revoked is cleaned up, wiped and removed. Leases still there are (re)queued as due now unless a revocation is
 * under way or has failed for good: an irrevocable lease keeps the mount until an operator revokes it
 * (`sys/leases/revoke-force`).
 */
export async function finishDisabledMounts(services: DisableServices): Promise<{ finished: number; waiting: number }> {
  const result = { finished: 0, waiting: 0 };
  for (const entry of await services.mounts.disabling()) {
    if (!services.backends.has(entry.type)) continue; // Only a process with the backend can run its clean-up hook.
    try {
      const outcome = await finishDisabled(services, entry);
      if (outcome !== 'gone') result[outcome]++;
    } catch (error) {
      result.waiting++;
      services.log.error('finishing a disabled mount failed; will retry', {
        mount: entry.path,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return result;
}

/** Finishes one `disabling` mount, or says what it waits for; `gone` when another process finished it first. */
async function finishDisabled(services: DisableServices, entry: MountEntry): Promise<'finished' | 'waiting' | 'gone'> {
  if (entry.table === 'auth') await services.tokens.revokeIssued(entry);
  const leases = await services.leases.under(entry.path);
  if (leases.length > 0) {
    await requeue(services, leases);
    return 'waiting';
  }
  await wipeMount(services, entry);
  return (await services.mounts.removeDisabled(entry)) ? 'finished' : 'gone';
}

/** Leases of a disabling mount the sweep would otherwise only reach at their expiry (say, issued by a process whose cache still routed the mount). */
async function requeue(services: DisableServices, leases: LeaseItem[]): Promise<void> {
  const now = epochSeconds(services.clock);
  const dueNow = dueKey(now, '~');
  for (const lease of leases) {
    const queuedLater = lease.duePk === lease.queue && typeof lease.dueSk === 'string' && lease.dueSk > dueNow;
    const claimed = lease.revokingUntil !== undefined && lease.revokingUntil > now;
    if (lease.irrevocable || claimed || !queuedLater || lease.revocationAttempts > 0) continue;
    await services.leases.revokeLater(lease.leaseId).catch((error: unknown) => {
      if (!(error instanceof ConditionFailed)) throw error;
    });
  }
}

/** Takes the mount out of service; undefined when another process disabled (or replaced) it meanwhile. */
async function markDisabling(services: DisableServices, entry: MountEntry): Promise<MountEntry | undefined> {
  try {
    return await services.mounts.markDisabling(entry);
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    throw error;
  }
}

/** Every item of the mount's storage. */
async function wipeMount(services: DisableServices, entry: MountEntry): Promise<void> {
  const storage = new MountStorage(services.store, services.keyring, entry.uuid);
  for (const item of await storage.all()) await storage.delete(item.sk);
}
