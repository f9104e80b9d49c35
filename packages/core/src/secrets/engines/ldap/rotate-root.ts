import * as z from 'zod';
import type { Core } from '../../../core.ts';
import { epochSeconds } from '../../../lib/clock.ts';
import { type PathSpec, path } from '../../framework/backend.ts';
import { badRequest } from '../../framework/errors.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import { configKey, directoryConfig, loadConfigItem } from './config-model.ts';
import { dueUpdate } from './records.ts';
import { rootNextDue } from './rotation-schedule.ts';
import { changePassword } from './write-ahead.ts';

/** `rotate-root`: a new password for `binddn`, set in the directory and stored, never shown. */
export const rotateRootPaths: PathSpec[] = [
  path({
    pattern: 'rotate-root',
    fields: z.object({}),
    operations: {
      update: async ({ core, storage }) => {
        await rotateRoot(core, storage);
        return undefined;
      },
    },
  }),
];

export async function rotateRoot(core: Core, storage: MountStorage): Promise<void> {
  const item = await loadConfigItem(storage);
  if (!item) throw badRequest('the directory engine is not configured: write "config" first');
  const config = directoryConfig(storage, item);
  const now = epochSeconds(core.clock);
  await changePassword({
    core,
    storage,
    key: configKey,
    dn: config.fields.binddn,
    config,
    isRoot: true,
    due: dueUpdate(storage.pk, configKey, rootNextDue(config.fields, now, now)),
  });
}
