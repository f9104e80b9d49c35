import * as z from 'zod';
import { badRequest } from '../../lib/errors.ts';
import { type PathSpec, path } from '../framework/backend.ts';
import { bool } from '../framework/fields.ts';
import type { BuiltinServices } from './builtin.ts';
import { typeKvPairs, typeString } from '../framework/vault-field-types.ts';

const devicePath = typeString
  .pipe(z.string().min(1).max(128))
  .describe('The path of the audit device. Example: "file"');

/** `sys/audit`, `sys/audit/:path` and `sys/audit-hash/:path`, as Vault serves them (all need sudo). */
export const auditPaths = (services: Pick<BuiltinServices, 'audit'>): PathSpec[] => [
  path({
    pattern: 'audit',
    fields: z.object({}),
    sudo: true,
    summaries: { read: 'Lists the enabled audit devices.' },
    operations: {
      read: async () => {
        const devices = await services.audit.devices.list();
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
      type: typeString.pipe(z.string().min(1)).optional().describe('The type of the audit device: file or socket.'),
      description: typeString
        .pipe(z.string().max(1024))
        .optional()
        .describe('User-friendly description for this audit device.'),
      // Vault's TypeKVPairs: `{"log_raw": true}` is `{"log_raw": "1"}`, which the device reads as true.
      options: typeKvPairs
        .optional()
        .describe('Configuration options for the audit device (file_path, address, format, ...).'),
      local: bool.optional().describe('Mark the device as local: not replicated, unaffected by replication.'),
    }),
    sudo: true,
    summaries: {
      update: 'Enables a new audit device at the given path.',
      delete: 'Disables the audit device at the given path.',
    },
    operations: {
      update: async ({ data }) => {
        if (!data.type) throw badRequest('"type" is required');
        await services.audit.devices.enable(data.path, {
          type: data.type,
          ...(data.description === undefined ? {} : { description: data.description }),
          ...(data.options === undefined ? {} : { options: data.options }),
          ...(data.local === undefined ? {} : { local: data.local }),
        });
        return undefined;
      },
      delete: async ({ data }) => {
        await services.audit.devices.disable(data.path);
        return undefined;
      },
    },
  }),
  path({
    pattern: 'audit-hash/:path+',
    fields: z.object({ path: devicePath, input: typeString.pipe(z.string()).describe('The input string to hash.') }),
    sudo: true,
    summaries: { update: "Hashes the input with the audit device's salt, as it would appear in its log." },
    operations: {
      update: async ({ data }) => {
        const hash = await services.audit.devices.hash(data.path, data.input);
        if (!hash) throw badRequest(`no audit device at "${data.path}"`);
        return { data: { hash } };
      },
    },
  }),
];
