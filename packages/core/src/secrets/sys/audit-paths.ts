import * as z from 'zod';
import { type PathSpec, path } from '../framework/backend.ts';
import { badRequest } from '../../lib/errors.ts';
import { bool, stringMap } from '../framework/fields.ts';

const devicePath = z.string().min(1).max(128);

/** `sys/audit`, `sys/audit/:path` and `sys/audit-hash/:path`, as Vault serves them (all need sudo). */
export const auditPaths: PathSpec[] = [
  path({
    pattern: 'audit',
    fields: z.object({}),
    sudo: true,
    operations: {
      read: async ({ core }) => {
        const devices = await core.audit.devices.list();
        return {
          data: Object.fromEntries(devices.map((device) => [device.path, device])),
        };
      },
    },
  }),
  path({
    pattern: 'audit/:path+',
    fields: z.object({
      path: devicePath,
      type: z.string().min(1).describe('The device type: file or socket.').optional(),
      description: z.string().max(1024).optional(),
      options: stringMap.optional(),
      local: bool.optional(),
    }),
    sudo: true,
    operations: {
      update: async ({ core, data }) => {
        if (!data.type) throw badRequest('"type" is required');
        await core.audit.devices.enable(data.path, {
          type: data.type,
          ...(data.description === undefined ? {} : { description: data.description }),
          ...(data.options === undefined ? {} : { options: data.options }),
          ...(data.local === undefined ? {} : { local: data.local }),
        });
        return undefined;
      },
      delete: async ({ core, data }) => {
        await core.audit.devices.disable(data.path);
        return undefined;
      },
    },
  }),
  path({
    pattern: 'audit-hash/:path+',
    fields: z.object({ path: devicePath, input: z.string() }),
    sudo: true,
    operations: {
      update: async ({ core, data }) => {
        const hash = await core.audit.devices.hash(data.path, data.input);
        if (!hash) throw badRequest(`no audit device at "${data.path}"`);
        return { data: { hash } };
      },
    },
  }),
];
