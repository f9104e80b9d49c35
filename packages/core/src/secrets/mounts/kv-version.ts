import { badRequest } from '../../lib/errors.ts';
import type { MountEntry } from './mount-table.ts';

/**
 * A `kv` mount's version, Vault's `options.version`: `2` is the versioned store, anything else version 1. The mount
 * table only records it; the kv engine reads it per request (and upgrades a mount's data on its first version 2 request).
 */
export const isKvV2 = (mount: Pick<MountEntry, 'options'>) => mount.options.version === '2';

export function checkKvVersion(version: string | undefined): void {
  if (version !== undefined && !['', '1', '2'].includes(version))
    throw badRequest(`invalid value for "options.version": ${version} (kv is version 1 or 2)`);
}
