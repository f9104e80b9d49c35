import * as z from 'zod';
import { epochSeconds } from '../../../lib/clock.ts';
import { badRequest } from '../../../lib/errors.ts';
import { type PathSpec, path } from '../../framework/backend.ts';
import { configKey, directoryConfig, loadConfigItem } from './config-model.ts';
import { engineContext, type LdapEngineContext } from './context.ts';
import { dueUpdate } from './records.ts';
import { rootNextDue } from './rotation-schedule.ts';
import { changePassword } from './write-ahead.ts';

/** `rotate-root`: a new password for `binddn`, set in the directory and stored, never shown. */
export const rotateRootPaths: PathSpec[] = [
  path({
    pattern: 'rotate-root',
    fields: z.object({}),
    summaries: {
      update: 'Rotate the root password ("bindpass"): a new one is set in the directory and stored, never shown.',
    },
    operations: {
      update: async (request) => {
        await rotateRoot(engineContext(request));
        return undefined;
      },
    },
  }),
];

export async function rotateRoot(context: LdapEngineContext): Promise<void> {
  const { storage, system } = context;
  const item = await loadConfigItem(storage);
  if (!item) throw badRequest('the directory engine is not configured: write "config" first');
  const config = directoryConfig(storage, item);
  const now = epochSeconds(system.clock);
  await changePassword({
    context,
    key: configKey,
    dn: config.fields.binddn,
    config,
    isRoot: true,
    due: dueUpdate(context.partition, configKey, rootNextDue(config.fields, now, now)),
  });
}
