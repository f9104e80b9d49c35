import * as z from 'zod';
import { epochSeconds } from '../../../lib/clock.ts';
import { badRequest } from '../../../lib/errors.ts';
import { ConditionFailed } from '../../../storage/store.ts';
import { type PathSpec, path, type Request } from '../../framework/backend.ts';
import { bool, duration } from '../../framework/fields.ts';
import { messageOf, withDirectory } from './client.ts';
import type { DirectoryConfig } from './config-model.ts';
import { healFields, sealDn } from './account-heal.ts';
import { engineContext } from './context.ts';
import { checkDn } from './dn.ts';
import { checkHierarchicalName, claimWrites, currentOwner, normalizeDn, releaseWrites } from './managed-accounts.ts';
import { accountChange, dueUpdate } from './records.ts';
import { minStaticRotationPeriod } from './rotation-schedule.ts';
import {
  loadStaticRole,
  type StaticRoleValue,
  staticChange,
  staticRoleKey,
  staticRoleKeyPrefix,
} from './static-rotation.ts';
import { changePassword, recoverPending, requireDirectoryConfig } from './write-ahead.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/** `static-role/:name`: existing directory entries whose password the engine rotates. Names may hold `/`. */

const fields = z.object({
  name: typeString.pipe(z.string()).describe('Name of the static role; may hold slashes.'),
  username: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'The user name of the existing directory entry whose password the role rotates; cannot be changed later.',
    ),
  dn: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'Distinguished name of the existing entry; when not given, the one entry under "userdn" whose "userattr" is "username".',
    ),
  rotation_period: duration
    .optional()
    .describe('How often the password is rotated, in seconds or as a duration (at least 5s).'),
  skip_import_rotation: bool
    .optional()
    .describe(
      'Do not rotate the password when the role is created (default: the config\'s "skip_static_role_import_rotation").',
    ),
});
type Fields = z.output<typeof fields>;

export const staticRolePaths: PathSpec[] = [
  path({
    pattern: 'static-role/:name+',
    fields,
    summaries: {
      read: 'Read a static role.',
      create: 'Create a static role: an existing entry whose password the engine rotates (at once, unless skipped).',
      update: "Update a static role's rotation period, or create it.",
      delete: 'Delete a static role; the entry and its current password stay in the directory.',
    },
    exists: async ({ storage, data }) => (await loadStaticRole(storage, roleName(data.name))) !== undefined,
    operations: {
      read: async ({ storage, data }) => {
        const item = await loadStaticRole(storage, roleName(data.name));
        if (!item) return undefined;
        const role = item.value as unknown as StaticRoleValue;
        return {
          data: {
            dn: role.dn,
            username: role.username,
            rotation_period: role.rotation_period,
            skip_import_rotation: role.skip_import_rotation,
            last_service_rotation: item.lastRotation ? new Date(item.lastRotation * 1000).toISOString() : null,
            ...healFields(item),
          },
        };
      },
      create,
      update,
      delete: async ({ storage, data }) => {
        const item = await loadStaticRole(storage, roleName(data.name));
        if (!item) return undefined;
        const role = item.value as unknown as StaticRoleValue;
        await storage.transact([{ delete: item.sk }, ...releaseWrites(role.username, role.dn)]);
        return undefined;
      },
    },
  }),
  path({
    pattern: 'static-role/:prefix*',
    fields: z.object({
      prefix: typeString
        .pipe(z.string())
        .default('')
        .describe('List the static roles under this prefix (a name ending in a slash).'),
    }),
    summaries: { list: 'List static roles.', read: 'List static roles (as a read).' },
    operations: {
      list: listRoles,
      // `GET static-role` lists too, as the reference shows it as an endpoint.
      read: listRoles,
    },
  }),
];

async function listRoles({ storage, data }: Request<{ prefix: string }>) {
  const prefix = data.prefix.replace(/\/*$/, '');
  return {
    data: {
      keys: await storage.list(`${staticRoleKeyPrefix}${prefix ? `${prefix}/` : ''}`),
    },
  };
}

const roleName = (raw: string) => raw.replace(/\/+$/, '');

async function create(request: Request<Fields>) {
  const { storage, system, data } = request;
  const context = engineContext(request);
  const nameError = checkHierarchicalName('name', data.name);
  if (nameError) throw badRequest(nameError);
  const name = roleName(data.name);
  if (!data.username) throw badRequest('missing "username": the user name of the existing entry is required');
  if (data.rotation_period === undefined) throw badRequest('missing "rotation_period"');
  checkPeriod(data.rotation_period);
  const dnError = data.dn ? checkDn('dn', data.dn) : undefined;
  if (dnError) throw badRequest(dnError);
  const config = await requireDirectoryConfig(context);
  const dn = await resolveEntry(config, data.username, data.dn);
  const key = staticRoleKey(name);
  const now = epochSeconds(system.clock);
  const skip = data.skip_import_rotation ?? config.fields.skip_static_role_import_rotation;
  const role: StaticRoleValue = {
    username: data.username,
    dn,
    rotation_period: data.rotation_period,
    skip_import_rotation: skip,
    created: now,
  };

  const owner = await currentOwner(storage, data.username, dn);
  if (owner) throw badRequest(`"${data.username}" (${dn}) is already managed by ${owner}`);
  const due = dueUpdate(context.partition, key, skip ? now + role.rotation_period : now);
  try {
    await storage.transact([
      { put: key, item: { value: role, sealedDn: sealDn(context, key, dn), ...due.set }, when: { absent: true } },
      ...claimWrites(key, data.username, dn),
    ]);
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    const now = await currentOwner(storage, data.username, dn);
    throw badRequest(
      now
        ? `"${data.username}" (${dn}) is already managed by ${now}`
        : `static role "${name}" was created concurrently`,
    );
  }
  if (skip) return undefined;

  const item = await loadStaticRole(storage, name);
  if (!item) return undefined;
  const change = staticChange(context, name, item, config);
  try {
    await changePassword(change);
  } catch (error) {
    // The role must not be dropped while the directory may hold a password only its write-ahead knows.
    let outcome: Awaited<ReturnType<typeof recoverPending>>;
    try {
      const after = await loadStaticRole(storage, name);
      outcome = after ? await recoverPending(change, after) : 'none';
    } catch (recoveryError) {
      system.log.error('import rotation failed and could not be settled; the role stays for the job to retry', {
        key,
        error: messageOf(recoveryError),
      });
      throw badRequest(
        `static role "${name}" was saved but its import rotation failed and will be retried: ${messageOf(error)}`,
      );
    }
    if (outcome === 'recorded') return undefined;
    await storage.transact([{ delete: key }, ...releaseWrites(data.username, dn)]);
    throw error;
  }
  return undefined;
}

async function update(request: Request<Fields>) {
  const { storage, data } = request;
  const name = roleName(data.name);
  const item = await loadStaticRole(storage, name);
  if (!item) return create(request);
  const role = item.value as unknown as StaticRoleValue;
  if (data.username !== undefined && data.username !== role.username)
    throw badRequest('"username" cannot be modified after the role is created');
  if (data.dn !== undefined && data.dn !== '' && normalizeDn(data.dn) !== normalizeDn(role.dn)) {
    throw badRequest('"dn" cannot be modified after the role is created');
  }
  if (data.rotation_period === undefined) return undefined;
  checkPeriod(data.rotation_period);
  const updated: StaticRoleValue = {
    ...role,
    rotation_period: data.rotation_period,
  };
  const base = item.lastRotation ?? role.created;
  const due = item.pending
    ? { set: {}, remove: [] }
    : dueUpdate(engineContext(request).partition, item.sk, base + updated.rotation_period);
  await storage.update(item.sk, accountChange({ value: updated, ...due.set }, due.remove), { when: { exists: true } });
  return undefined;
}

function checkPeriod(period: number): void {
  if (period < minStaticRotationPeriod)
    throw badRequest(`invalid "rotation_period": must be at least ${minStaticRotationPeriod} seconds`);
}

/** The DN of the entry: `dn` when given (it must exist), else the one entry under `userdn` with `userattr` = username. */
export async function resolveEntry(config: DirectoryConfig, username: string, dn: string | undefined): Promise<string> {
  return withDirectory(config, async (directory) => {
    if (dn) {
      const entry = await directory.entryAt(dn);
      if (!entry) throw badRequest(`invalid "dn": no entry "${dn}" in the directory`);
      return entry.dn;
    }
    if (!config.fields.userdn)
      throw badRequest('the config has no "userdn" to search for "username" under; set it or give "dn"');
    const { entries, more } = await directory.findUser(username);
    const [first, second] = entries;
    if (second || more)
      throw badRequest(
        `invalid "username": more than one entry with ${config.fields.userattr}=${username} under "${config.fields.userdn}"`,
      );
    if (!first)
      throw badRequest(
        `invalid "username": no entry with ${config.fields.userattr}=${username} under "${config.fields.userdn}"`,
      );
    return first.dn;
  });
}
