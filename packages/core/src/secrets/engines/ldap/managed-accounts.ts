import type { MountStorage, MountWrite } from '../../mounts/mount-storage.ts';

/**
 * One directory account is managed by one owner only (a static role or a library set): a claim item per
 * user name and per DN, written only where none is (`{ absent: true }`) in the same transaction as the owner.
 */

export const claimKeys = (username: string, dn: string) => [
  `managed/user/${username.toLowerCase()}`,
  `managed/dn/${normalizeDn(dn)}`,
];

export const normalizeDn = (dn: string) =>
  dn
    .split(',')
    .map((part) => part.trim())
    .join(',')
    .toLowerCase();

export function claimWrites(owner: string, username: string, dn: string): MountWrite[] {
  return claimKeys(username, dn).map((key) => ({ put: key, item: { value: { owner } }, when: { absent: true } }));
}

export function releaseWrites(username: string, dn: string): MountWrite[] {
  return claimKeys(username, dn).map((key) => ({ delete: key }));
}

/** Who manages the account already, if anyone: `static-role/<name>` or `library/<set>`. */
export async function currentOwner(storage: MountStorage, username: string, dn: string): Promise<string | undefined> {
  for (const key of claimKeys(username, dn)) {
    const claim = await storage.get<{ owner: string }>(key);
    if (claim) return claim.owner;
  }
  return undefined;
}

/** Names in paths (`static-role/:name+`, `library/:set+`): slash-separated, no empty or dot segments. */
export function checkHierarchicalName(field: string, name: string): string | undefined {
  const trimmed = name.replace(/\/+$/, '');
  if (trimmed === '' || trimmed.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')) {
    return `invalid "${field}": "${name}" must be non-empty names separated by single slashes`;
  }
  return undefined;
}
