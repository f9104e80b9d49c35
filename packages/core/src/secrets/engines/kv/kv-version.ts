import type { MountEntry } from '../../mounts/mount-table.ts';

/** Whether a `kv` mount is versioned (Vault's `options.version` = `2`). */
export const isKvV2 = (mount: Pick<MountEntry, 'options'>) => mount.options.version === '2';
