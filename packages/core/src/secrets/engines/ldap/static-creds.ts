import * as z from 'zod';
import { epochSeconds } from '../../../lib/clock.ts';
import { badRequest } from '../../../lib/errors.ts';
import { type PathSpec, path } from '../../framework/backend.ts';
import { verifiedForRead } from './account-heal.ts';
import { engineContext } from './context.ts';
import { loadStaticRole, rotateStaticRole, type StaticRoleValue, settleStaticRole } from './static-rotation.ts';
import { typeString } from '../../framework/vault-field-types.ts';
import { requireDirectoryConfig } from './write-ahead.ts';

/** `static-cred/:name` (the current and previous password of a static role) and `rotate-role/:name` (rotate now). */

const roleName = (raw: string) => raw.replace(/\/+$/, '');

export const staticCredPaths: PathSpec[] = [
  path({
    pattern: 'static-cred/:name+',
    fields: z.object({ name: typeString.pipe(z.string()).describe('Name of the static role.') }),
    summaries: { read: 'Read the current and previous password of a static role.' },
    operations: {
      read: async (request) => {
        const { storage, system, data } = request;
        const name = roleName(data.name);
        const found = await loadStaticRole(storage, name);
        if (!found) return undefined;
        const context = engineContext(request);
        // Never a password the directory refuses: a write-ahead is settled, and the stored password is verified
        // (one bind per value and 30 s in this process) and healed at once if the directory no longer takes it.
        const settled = await settleStaticRole(context, name, found);
        const item = await verifiedForRead(context, () => requireDirectoryConfig(context), settled, 'read');
        const role = item.value as unknown as StaticRoleValue;
        const open = (sealed: string | undefined) => (sealed ? storage.open(item.sk, sealed) : '');
        return {
          data: {
            dn: role.dn,
            username: role.username,
            password: open(item.password),
            last_password: open(item.lastPassword),
            last_service_rotation: item.lastRotation ? new Date(item.lastRotation * 1000).toISOString() : null,
            rotation_period: role.rotation_period,
            ttl: item.dueAt === undefined ? 0 : Math.max(0, item.dueAt - epochSeconds(system.clock)),
          },
        };
      },
    },
  }),
  path({
    pattern: 'rotate-role/:name+',
    fields: z.object({ name: typeString.pipe(z.string()).describe('Name of the static role.') }),
    summaries: { update: "Rotate a static role's password now." },
    operations: {
      update: async (request) => {
        const name = roleName(request.data.name);
        if (!(await loadStaticRole(request.storage, name))) throw badRequest(`no static role named "${name}"`);
        await rotateStaticRole(engineContext(request), name);
        return undefined;
      },
    },
  }),
];
