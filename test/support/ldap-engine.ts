import { vi } from 'vitest';
import type { LdapAccountItem } from '../../packages/core/src/secrets/engines/ldap/records.ts';
import { MountStorage } from '../../packages/core/src/secrets/mounts/mount-storage.ts';
import type { Write } from '../../packages/core/src/storage/store.ts';
import { type SecretsHarness, startSecrets } from './secrets-harness.ts';
import { managerDn, managerPassword, peopleDn, type Slapd, startSlapd } from './slapd.ts';

export interface LdapEngine {
  h: SecretsHarness;
  slapd: Slapd;
  /** `/v1/ldap/<path>` with the root token. */
  call(method: string, path: string, body?: unknown): ReturnType<SecretsHarness['call']>;
  /** POST config pointing at the test directory as the manager entry, plus `extra`. */
  configure(extra?: Record<string, unknown>): Promise<void>;
  /** The mount's storage, to look at what the engine stored (sealed values opened). */
  storage(): Promise<MountStorage>;
  /** An item of the mount as stored, e.g. `config` or `static-role/app`. */
  item(key: string): Promise<LdapAccountItem | undefined>;
  /** The opened current password of a stored account (`config` for the bind password). */
  storedPassword(key: string): Promise<string | undefined>;
  close(): Promise<void>;
}

/**
 * Makes the write that records a new password of `key` (a change's last step: the transaction that sets the password
 * where the write-ahead is still the change's own, and drops its record) throw `error` until `mockRestore()`: a run
 * that dies after the directory took the password.
 */
export function failRecording(e: LdapEngine, key: string, error: Error): { mockRestore(): void } {
  const store = e.h.core.store;
  const transact = store.transact.bind(store);
  return vi.spyOn(store, 'transact').mockImplementation(async (writes: Write[]) => {
    const records = writes.some(
      (write) =>
        'update' in write &&
        write.update.sk === key &&
        write.change.set?.password !== undefined &&
        write.when?.equals?.pendingId !== undefined,
    );
    if (records) throw error;
    return transact(writes);
  });
}

export async function startLdapEngine(options: Parameters<typeof startSecrets>[0] = {}): Promise<LdapEngine> {
  const [h, slapd] = await Promise.all([startSecrets(options), startSlapd()]);
  const mounted = await h.call('POST', '/v1/sys/mounts/ldap', { token: h.rootToken, body: { type: 'ldap' } });
  if (mounted.status !== 204) throw new Error(`mounting ldap failed: ${JSON.stringify(mounted.body)}`);
  const call = (method: string, path: string, body?: unknown) =>
    h.call(method, `/v1/ldap/${path}`, { token: h.rootToken, body });
  const storage = async () => {
    const mount = await h.core.mounts.resolve('ldap/');
    if (!mount) throw new Error('ldap/ is not mounted');
    return new MountStorage(h.core.store, h.core.keyring, mount.uuid);
  };
  const item = async (key: string) => (await storage()).getItem<LdapAccountItem>(key);
  return {
    h,
    slapd,
    call,
    storage,
    item,
    async storedPassword(key) {
      const found = await item(key);
      return found?.password ? (await storage()).open(key, found.password) : undefined;
    },
    async configure(extra = {}) {
      const response = await call('POST', 'config', {
        binddn: managerDn,
        bindpass: managerPassword,
        url: slapd.url,
        userdn: peopleDn,
        ...extra,
      });
      if (response.status !== 204)
        throw new Error(`config failed: ${response.status} ${JSON.stringify(response.body)}`);
    },
    async close() {
      await Promise.all([h.close(), slapd.close()]);
    },
  };
}
