import { NoSuchObjectError } from 'ldapts';
import * as z from 'zod';
import { epochSeconds } from '../../../lib/clock.ts';
import { badRequest, notFound } from '../../../lib/errors.ts';
import { checkTemplate, renderTemplate, TemplateError, utf16le } from '../../../lib/go-template/index.ts';
import type { PathSpec, Request } from '../../framework/backend.ts';
import { leasedSecret, path } from '../../framework/backend.ts';
import { duration } from '../../framework/fields.ts';
import { mountTtls } from '../../mounts/mount-table.ts';
import { DirectoryError, withDirectory } from './client.ts';
import { newPassword } from './config-model.ts';
import { engineContext } from './context.ts';
import { distinguishedNames, LdifError, parseLdif, runLdif, unsafeLdifValue } from './ldif.ts';
import { checkHierarchicalName } from './managed-accounts.ts';
import { requireDirectoryConfig } from './write-ahead.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/**
 * `role/:name` (dynamic roles: LDIF templates) and `creds/:name` (a new account per read, under a renewable
 * lease whose end runs the deletion LDIF, even after the role is gone).
 */

export const defaultUsernameTemplate = 'v_{{.DisplayName}}_{{.RoleName}}_{{random 10}}_{{unix_time}}';

interface DynamicRole {
  creation_ldif: string;
  deletion_ldif: string;
  rollback_ldif: string;
  username_template: string;
  default_ttl: number;
  max_ttl: number;
}

const ldifFields = ['creation_ldif', 'deletion_ldif', 'rollback_ldif'] as const;

const fields = z.object({
  name: typeString.pipe(z.string()).describe('Name of the dynamic role; may hold slashes.'),
  creation_ldif: typeString
    .pipe(z.string())
    .optional()
    .describe('A templated LDIF (plain or base64) run to create an account; required.'),
  deletion_ldif: typeString
    .pipe(z.string())
    .optional()
    .describe('A templated LDIF (plain or base64) run to delete the account when its lease ends; required.'),
  rollback_ldif: typeString
    .pipe(z.string())
    .optional()
    .describe('A templated LDIF (plain or base64) run when "creation_ldif" fails part-way, to undo what it did.'),
  username_template: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'A template for the generated user names (default: v_{{.DisplayName}}_{{.RoleName}}_{{random 10}}_{{unix_time}}).',
    ),
  default_ttl: duration
    .optional()
    .describe("The lease duration of the credentials, in seconds or as a duration (default: the mount's)."),
  max_ttl: duration
    .optional()
    .describe("The longest the credentials may live, renewals included (default: the mount's)."),
});
type Fields = z.output<typeof fields>;

const roleKey = (name: string) => `role/${name.replace(/\/+$/, '')}`;

export const dynamicRolePaths: PathSpec[] = [
  path({
    pattern: 'role/:name+',
    fields,
    summaries: {
      read: 'Read a dynamic role.',
      create: 'Create a dynamic role: LDIF templates that create and delete an account per credential request.',
      update: 'Update a dynamic role; fields not sent keep their value.',
      delete: 'Delete a dynamic role; accounts already issued are deleted when their leases end.',
    },
    exists: async ({ storage, data }) => (await storage.getItem(roleKey(data.name))) !== undefined,
    operations: {
      read: async ({ storage, data }) => {
        const role = await storage.getAuthenticated<DynamicRole>(roleKey(data.name));
        return role && { data: { ...role } };
      },
      create: write,
      update: write,
      delete: async ({ storage, data }) => {
        await storage.delete(roleKey(data.name));
        return undefined;
      },
    },
  }),
  path({
    pattern: 'role/:prefix*',
    fields: z.object({
      prefix: typeString
        .pipe(z.string())
        .default('')
        .describe('List the dynamic roles under this prefix (a name ending in a slash).'),
    }),
    summaries: { list: 'List dynamic roles.' },
    operations: {
      list: async ({ storage, data }) => {
        const prefix = data.prefix.replace(/\/*$/, '');
        return {
          data: {
            keys: await storage.list(`role/${prefix ? `${prefix}/` : ''}`),
          },
        };
      },
    },
  }),
  path({
    pattern: 'creds/:name+',
    fields: z.object({ name: typeString.pipe(z.string()).describe('Name of the dynamic role.') }),
    summaries: { read: 'Create an account from a dynamic role, under a lease whose end deletes it.' },
    operations: { read: issueCredentials },
  }),
];

/** LDIF may be sent base64-encoded; it is stored (and shown) decoded. */
function decodeLdif(value: string): string {
  const compact = value.replace(/[\r\n]/g, '');
  if (compact.length > 0 && compact.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(compact)) {
    const decoded = Buffer.from(compact, 'base64');
    const text = decoded.toString('utf8');
    if (Buffer.from(text, 'utf8').equals(decoded) && /^\s*(#|dn:|version:)/im.test(text)) return text;
  }
  return value;
}

async function write(request: Request<Fields>) {
  const { storage, data, mount, operation } = request;
  const nameError = checkHierarchicalName('name', data.name);
  if (nameError) throw badRequest(nameError);
  const key = roleKey(data.name);
  const existing = operation === 'update' ? await storage.getAuthenticated<DynamicRole>(key) : undefined;
  const role: DynamicRole = existing ?? {
    creation_ldif: '',
    deletion_ldif: '',
    rollback_ldif: '',
    username_template: '',
    default_ttl: 0,
    max_ttl: 0,
  };
  for (const field of ldifFields) if (data[field] !== undefined) role[field] = decodeLdif(data[field] as string);
  if (data.username_template !== undefined) role.username_template = data.username_template;
  if (data.default_ttl !== undefined) role.default_ttl = data.default_ttl;
  if (data.max_ttl !== undefined) role.max_ttl = data.max_ttl;

  if (!role.creation_ldif) throw badRequest('missing "creation_ldif": the LDIF that creates the account is required');
  if (!role.deletion_ldif) throw badRequest('missing "deletion_ldif": the LDIF that deletes the account is required');
  const { maxTtl: mountMax } = mountTtls(mount);
  if (role.max_ttl > mountMax)
    throw badRequest(`invalid "max_ttl": ${role.max_ttl}s is greater than the mount's maximum of ${mountMax}s`);
  if (role.max_ttl > 0 && role.default_ttl > role.max_ttl)
    throw badRequest('invalid "default_ttl": must not be greater than "max_ttl"');

  const sample = templateData(
    data.name.replace(/\/+$/, ''),
    'sample-display-name',
    'v_sample_user',
    'SamplePassword-123',
    0,
    3600,
  );
  for (const field of ldifFields) {
    if (!role[field]) continue;
    try {
      const entries = parseLdif(renderTemplate(role[field], sample, { functions: { utf16le } }));
      if (entries.length === 0) throw new LdifError('it holds no entries');
    } catch (error) {
      if (error instanceof TemplateError || error instanceof LdifError)
        throw badRequest(`invalid "${field}": ${error.message}`);
      throw error;
    }
  }
  if (role.username_template) {
    try {
      checkTemplate(role.username_template);
      renderTemplate(role.username_template, {
        RoleName: 'role',
        DisplayName: 'display',
      });
    } catch (error) {
      if (error instanceof TemplateError) throw badRequest(`invalid "username_template": ${error.message}`);
      throw error;
    }
  }
  // Authenticated: a role's LDIF is what the engine writes into the directory with its bind credentials.
  await storage.putAuthenticated(key, { ...role });
  return undefined;
}

function templateData(
  roleName: string,
  displayName: string,
  username: string,
  password: string,
  now: number,
  ttl: number,
) {
  const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
  return {
    Username: username,
    Password: password,
    RoleName: roleName,
    DisplayName: displayName,
    IssueTime: iso(now),
    IssueTimeSeconds: now,
    ExpirationTime: iso(now + ttl),
    ExpirationTimeSeconds: now + ttl,
  };
}

async function issueCredentials(request: Request<{ name: string }>) {
  const { storage, system, mount, caller, data } = request;
  const context = engineContext(request);
  const name = data.name.replace(/\/+$/, '');
  const role = await storage.getAuthenticated<DynamicRole>(roleKey(name));
  if (!role) throw notFound(`no dynamic role named "${name}"`);
  const config = await requireDirectoryConfig(context);
  const { defaultTtl, maxTtl: mountMax } = mountTtls(mount);
  const maxTtl = Math.min(role.max_ttl || mountMax, mountMax);
  const ttl = Math.min(role.default_ttl || defaultTtl, maxTtl);
  const now = epochSeconds(system.clock);
  const displayName = caller?.entry.displayName ?? '';
  const clock = { now: () => system.clock.now() };

  let username: string;
  let rendered: { creation: string; deletion: string; rollback: string };
  const password = await newPassword(context, config);
  try {
    username = renderTemplate(
      role.username_template || defaultUsernameTemplate,
      { RoleName: name, DisplayName: displayName },
      clock,
    );
    // A display name comes from a login's claims: it must not carry new lines (or anything LDIF reads otherwise)
    // into the directory. Refused, never escaped, so what is written is exactly what the caller is told.
    // A generated password is only checked for control characters: a policy may well start one with ":".
    for (const [what, value] of [
      ["the caller's display name", displayName],
      ['the generated username', username],
      ['the role name', name],
      ['the generated password', password],
    ] as const) {
      const problem = unsafeLdifValue(value, { checkStart: what !== 'the generated password' });
      if (problem) throw badRequest(`${what} cannot be written into the role's LDIF: it ${problem}`);
    }
    const values = templateData(name, displayName, username, password, now, ttl);
    const render = (template: string) =>
      template ? renderTemplate(template, values, { ...clock, functions: { utf16le } }) : '';
    rendered = {
      creation: render(role.creation_ldif),
      deletion: render(role.deletion_ldif),
      rollback: render(role.rollback_ldif),
    };
  } catch (error) {
    if (error instanceof TemplateError) throw badRequest(`the role's templates failed to render: ${error.message}`);
    throw error;
  }
  let creation: ReturnType<typeof parseLdif>;
  try {
    creation = parseLdif(rendered.creation);
    parseLdif(rendered.deletion);
  } catch (error) {
    if (error instanceof LdifError) throw badRequest(`the role's LDIF is invalid once rendered: ${error.message}`);
    throw error;
  }

  await withDirectory(config, async (directory) => {
    const failures = await runLdif(directory, creation, {
      continueOnError: false,
    });
    if (failures.length === 0) return;
    const created = `creation_ldif failed: ${failures[0]?.message}`;
    if (!rendered.rollback) throw new DirectoryError(`${created}; the role has no rollback_ldif`);
    let rollbackFailures: Awaited<ReturnType<typeof runLdif>>;
    try {
      rollbackFailures = await runLdif(directory, parseLdif(rendered.rollback), { continueOnError: true });
    } catch (error) {
      throw new DirectoryError(`${created}; rollback_ldif could not run: ${(error as Error).message}`);
    }
    throw new DirectoryError(
      rollbackFailures.length === 0
        ? `${created}; rollback_ldif was applied`
        : `${created}; rollback_ldif also failed: ${rollbackFailures.map((failure) => failure.message).join('; ')}`,
    );
  });

  return {
    data: {
      username,
      password,
      distinguished_names: distinguishedNames(creation),
    },
    secret: dynamicLease.secret({
      ttl,
      maxTtl,
      renewable: true,
      internal: { role: name, username, deletionLdif: rendered.deletion },
    }),
  };
}

/** What a dynamic account's lease keeps: the role and account it was issued for, and the deletion LDIF rendered then. */
type DynamicInternal = { role: string; username: string; deletionLdif: string };

/** Lease end: the deletion LDIF rendered at issue, every entry attempted; entries already gone count as done. */
export const dynamicLease = leasedSecret<DynamicInternal>('dynamic', {
  revoke: async (lease) => {
    const { internal } = lease;
    const config = await requireDirectoryConfig(engineContext(lease));
    const entries = parseLdif(String(internal.deletionLdif ?? ''));
    const failures = await withDirectory(config, (directory) => runLdif(directory, entries, { continueOnError: true }));
    const real = failures.filter((failure) => failure.code !== new NoSuchObjectError().code);
    if (real.length > 0)
      throw new DirectoryError(`deletion_ldif failed: ${real.map((failure) => failure.message).join('; ')}`);
  },
  renew: async () => undefined,
});
