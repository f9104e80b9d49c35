import type { Core } from './core.ts';
import { cleanupPending as finishCloudWork } from './secrets/engines/cloud/cleanup.ts';
import { rotateDue as rotateDirectoryPasswords } from './secrets/engines/ldap/rotation.ts';

/**
 * Engine work that has fallen due, each engine from its own queue: directory root and static-role rotations;
 * cloud root rotations and the clean-up of cloud resources a crash or a cloud failure left half done.
 */
export async function rotateDue(core: Core): Promise<{ rotated: number; failed: number }> {
  const directory = await rotateDirectoryPasswords(core);
  const cloud = await finishCloudWork(core);
  return { rotated: directory.rotated + cloud.rotated + cloud.settled, failed: directory.failed + cloud.failed };
}
