import { createPrivateKey, X509Certificate } from 'node:crypto';
import * as z from 'zod';
import { epochSeconds } from '../../../lib/clock.ts';
import { badRequest } from '../../../lib/errors.ts';
import { maxPolicyLength } from '../../../lib/password.ts';
import { type PathSpec, path, type Request } from '../../framework/backend.ts';
import { bool, duration, integer } from '../../framework/fields.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import { bindIdentity, canBind, timeouts } from './client.ts';
import {
  configDefaults,
  configKey,
  defaultPasswordLength,
  directoryConfig,
  type LdapConfigValue,
  loadConfigItem,
  tlsVersionNames,
} from './config-model.ts';
import { engineContext } from './context.ts';
import { checkDn } from './dn.ts';
import { accountChange, dueUpdate, pendingFields } from './records.ts';
import { checkSchedule, minRootRotationPeriod, minRotationWindow, rootNextDue } from './rotation-schedule.ts';
import { schemaNames } from './schemas.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/** `config`: how the engine reaches the directory. A POST merges into what is stored; `bindpass` is never shown. */

const fields = z.object({
  binddn: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'Distinguished name (DN) of the entry the engine binds as to manage user entries, e.g. cn=vault,ou=Users,dc=example,dc=com.',
    ),
  bindpass: typeString
    .pipe(z.string())
    .optional()
    .describe('Password of "binddn". Required on the first write; never shown.'),
  url: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'The directory to connect to, e.g. ldaps://ldap.example.com:636; a comma-separated list is tried in order on connection errors.',
    ),
  password_policy: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'The name of the password policy (sys/policies/password) that generates passwords; the name, not the policy.',
    ),
  schema: z
    .enum(schemaNames)
    .optional()
    .describe('The directory schema: openldap, racf or ad. Decides how a password is changed.'),
  userdn: typeString
    .pipe(z.string())
    .optional()
    .describe('The base DN under which a static role\'s or library account\'s "username" is searched for.'),
  userattr: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'The attribute that holds the user name under "userdn" (default: cn for openldap, userPrincipalName for ad, racfid for racf).',
    ),
  upndomain: typeString
    .pipe(z.string())
    .optional()
    .describe('Active Directory: the domain appended to "binddn" to bind as binddn@upndomain.'),
  request_timeout: duration
    .optional()
    .describe('Timeout for each request to the directory, in seconds or as a duration (default 90s).'),
  connection_timeout: duration
    .optional()
    .describe('Timeout for establishing a connection to the directory, in seconds or as a duration (default 30s).'),
  starttls: bool.optional().describe('Issue a StartTLS command after establishing an unencrypted connection.'),
  insecure_tls: bool.optional().describe('Skip TLS certificate verification. Not recommended outside tests.'),
  certificate: typeString
    .pipe(z.string())
    .optional()
    .describe("PEM CA certificate used to verify the directory's TLS certificate."),
  client_tls_cert: typeString
    .pipe(z.string())
    .optional()
    .describe('PEM client certificate presented to the directory; requires "client_tls_key".'),
  client_tls_key: typeString
    .pipe(z.string())
    .optional()
    .describe('PEM private key of "client_tls_cert"; never shown. An empty string removes it.'),
  tls_min_version: typeString
    .pipe(z.enum(tlsVersionNames))
    .optional()
    .describe('Minimum TLS version: tls10, tls11, tls12 or tls13.'),
  tls_max_version: typeString
    .pipe(z.enum(tlsVersionNames))
    .optional()
    .describe('Maximum TLS version: tls10, tls11, tls12 or tls13.'),
  case_sensitive_names: bool.optional().describe('Whether user and group names are compared case-sensitively.'),
  skip_static_role_import_rotation: bool
    .optional()
    .describe(
      "Default for new static roles: do not rotate an account's password when it is imported as a static role.",
    ),
  length: integer({ max: maxPolicyLength })
    .optional()
    .describe(
      'Deprecated (use "password_policy"): the length of generated passwords; cannot be set together with "password_policy".',
    ),
  rotation_period: duration
    .optional()
    .describe(
      'How often the root password ("bindpass") is rotated automatically; cannot be used with "rotation_schedule".',
    ),
  rotation_schedule: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'A five-field cron schedule (UTC) for rotating the root password automatically; cannot be used with "rotation_period".',
    ),
  rotation_window: duration
    .optional()
    .describe(
      'With "rotation_schedule": how long after the scheduled time a failed rotation may still be retried (at least 1h).',
    ),
  disable_automated_rotation: bool
    .optional()
    .describe('Stop rotating the root password automatically, keeping the period or schedule.'),
});
type Fields = z.output<typeof fields>;

const rotationFields = [
  'rotation_period',
  'rotation_schedule',
  'rotation_window',
  'disable_automated_rotation',
] as const;
/** The settings that decide where the bind password is sent and how the directory is verified on the way. */
const destinationFields = ['url', 'starttls', 'insecure_tls', 'certificate', 'tls_min_version'] as const;

export const configPaths: PathSpec[] = [
  path({
    pattern: 'config',
    fields,
    summaries: {
      read: 'Read the directory connection configuration (without its secrets).',
      create: 'Configure how the engine connects to the directory.',
      update: 'Update the directory connection configuration; fields not sent keep their value.',
      delete: 'Delete the directory connection configuration.',
    },
    exists: async ({ storage }) => (await loadConfigItem(storage)) !== undefined,
    operations: {
      read: async ({ storage }) => {
        const item = await loadConfigItem(storage);
        if (!item) return undefined;
        const { fields: value } = directoryConfig(storage, item);
        return { data: shown(value, item.lastRotation) };
      },
      create: write,
      update: write,
      delete: async ({ storage }) => {
        await storage.delete(configKey);
        return undefined;
      },
    },
  }),
];

async function write(request: Request<Fields>) {
  const { storage, system, data } = request;
  const item = await loadConfigItem(storage);
  const stored = {
    ...configDefaults,
    ...(item?.value as Partial<LdapConfigValue> | undefined),
  };
  const { bindpass, client_tls_key: clientKey, ...sent } = data;
  const merged: LdapConfigValue = { ...stored, ...definedOnly(sent) };

  if (sent.rotation_period && sent.rotation_schedule) {
    throw badRequest('"rotation_period" and "rotation_schedule" cannot both be set: choose one');
  }
  // Sending one of the two replaces the other, so a config can move from a period to a schedule.
  if (sent.rotation_period) merged.rotation_schedule = '';
  if (sent.rotation_schedule) merged.rotation_period = 0;
  validate(merged, sent);
  // An empty password is no password: every later directory call would fail with 502 (issue 24).
  if (bindpass === '') throw badRequest('invalid "bindpass": must not be empty; it is the password of "binddn"');
  if (!item?.password && !bindpass) throw badRequest('missing "bindpass": the password of "binddn" is required');
  // The stored bind password goes only to the directory, and over the channel, it was given for: a write that
  // changes either must carry the password again (issue 23 §3; docs/operator-settings.md).
  const moved = item ? destinationFields.filter((field) => merged[field] !== stored[field]) : [];
  if (moved.length > 0 && !bindpass) {
    throw badRequest(
      `"bindpass" is required when ${moved.map((field) => `"${field}"`).join(', ')} changes: the stored bind password is sent only where it was given for`,
    );
  }
  if (clientKey) {
    try {
      createPrivateKey(clientKey);
    } catch {
      throw badRequest('invalid "client_tls_key": not a PEM private key');
    }
  }
  const hasClientKey = clientKey !== undefined ? clientKey !== '' : item?.clientKey !== undefined;
  if (Boolean(merged.client_tls_cert) !== hasClientKey) {
    throw badRequest('"client_tls_cert" and "client_tls_key" must be set together');
  }

  const now = epochSeconds(system.clock);
  const rotationChanged =
    !item || rotationFields.some((field) => sent[field] !== undefined && sent[field] !== stored[field]);
  const due = rotationChanged
    ? dueUpdate(engineContext(request).partition, configKey, rootNextDue(merged, now, now))
    : { set: {}, remove: [] };
  const set: Record<string, unknown> = { value: merged, ...due.set };
  const remove = [...due.remove];
  if (bindpass !== undefined) {
    set.password = storage.seal(configKey, bindpass);
    // A new bind password supersedes any rotation that had not finished.
    remove.push(...pendingFields, 'lastPassword');
  }
  if (clientKey !== undefined) {
    if (clientKey === '') remove.push('clientKey');
    else set.clientKey = storage.seal(`${configKey}#client_tls_key`, clientKey);
  }
  await storage.update(configKey, accountChange(set, remove));
  const reaches =
    bindpass !== undefined || bindFields.some((field) => sent[field] !== undefined && sent[field] !== stored[field]);
  const warning = reaches ? await bindWarning(storage) : undefined;
  return warning ? { warnings: [warning] } : undefined;
}

/** The fields that decide whether the engine's bind works: a write that changes one is checked against the directory. */
const bindFields = [
  'binddn',
  'url',
  'upndomain',
  'certificate',
  'insecure_tls',
  'starttls',
  'client_tls_cert',
] as const;

/**
 * A config the directory refuses is kept (it may be fixed in the directory next), but said so, as Vault's engines
 * warn on a failed connection check: a warning when the directory answers and refuses the bind. A directory that
 * cannot be reached within a few seconds is not checked (nothing is known yet).
 */
async function bindWarning(storage: MountStorage): Promise<string | undefined> {
  const item = await loadConfigItem(storage);
  if (!item) return undefined;
  const config = directoryConfig(storage, item);
  const { connectMs } = timeouts(config);
  const seconds = Math.min(Math.ceil(connectMs / 1000), bindCheckSeconds);
  const quick = { ...config, fields: { ...config.fields, connection_timeout: seconds, request_timeout: seconds } };
  try {
    if (await canBind(quick, bindIdentity(config), config.bindpass)) return undefined;
  } catch {
    return undefined;
  }
  return `the directory refused to bind as "${bindIdentity(config)}" with this "bindpass" (invalid credentials): every call to the directory will fail until "binddn" or "bindpass" is corrected`;
}

/** The longest a config write waits for the directory to answer its bind check. */
const bindCheckSeconds = 5;

function validate(merged: LdapConfigValue, sent: Partial<LdapConfigValue>): void {
  if (!merged.binddn) throw badRequest('missing "binddn": the DN the engine binds as is required');
  if (merged.length > 0 && merged.password_policy) {
    throw badRequest(
      '"length" and "password_policy" cannot be set together: "length" is deprecated, use only "password_policy"',
    );
  }
  if (sent.length !== undefined && sent.length !== 0 && sent.length < 4)
    throw badRequest('invalid "length": must be at least 4');
  // With a UPN domain the engine binds as `binddn@upndomain` (Active Directory): binddn is then a user name.
  const dnError = (merged.upndomain ? undefined : checkDn('binddn', merged.binddn)) ?? checkDn('userdn', merged.userdn);
  if (dnError) throw badRequest(dnError);
  if (merged.upndomain && !/^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*$/.test(merged.upndomain)) {
    throw badRequest(`invalid "upndomain": "${merged.upndomain}" is not a domain name`);
  }
  for (const url of merged.url.split(',').map((entry) => entry.trim())) {
    const problem = directoryUrlProblem(url);
    if (problem) throw badRequest(`invalid "url": "${url}" ${problem}`);
  }
  if (merged.certificate) {
    try {
      new X509Certificate(merged.certificate);
    } catch {
      throw badRequest('invalid "certificate": not a PEM x509 certificate');
    }
  }
  if (merged.client_tls_cert) {
    try {
      new X509Certificate(merged.client_tls_cert);
    } catch {
      throw badRequest('invalid "client_tls_cert": not a PEM x509 certificate');
    }
  }
  if (tlsVersionNames.indexOf(merged.tls_min_version) > tlsVersionNames.indexOf(merged.tls_max_version)) {
    throw badRequest('"tls_min_version" must not be greater than "tls_max_version"');
  }
  if (merged.rotation_period > 0 && merged.rotation_period < minRootRotationPeriod) {
    throw badRequest(`invalid "rotation_period": must be at least ${minRootRotationPeriod} seconds`);
  }
  if (merged.rotation_schedule) checkSchedule(merged.rotation_schedule);
  if (merged.rotation_window > 0) {
    if (merged.rotation_window < minRotationWindow)
      throw badRequest(`invalid "rotation_window": must be at least ${minRotationWindow} seconds (1h)`);
    if (merged.rotation_period > 0)
      throw badRequest('"rotation_window" cannot be used with "rotation_period", only with "rotation_schedule"');
    if (!merged.rotation_schedule) throw badRequest('"rotation_window" needs a "rotation_schedule"');
  }
}

/** Why `url` cannot reach a directory (scheme, host, port), or undefined. */
function directoryUrlProblem(url: string): string | undefined {
  if (!/^ldaps?:\/\//i.test(url)) return 'is not an ldap:// or ldaps:// URL';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a URL (expected ldap://host[:port] or ldaps://host[:port])';
  }
  if (parsed.hostname === '') return 'has no host';
  if (
    parsed.username ||
    parsed.password ||
    parsed.search ||
    parsed.hash ||
    (parsed.pathname !== '' && parsed.pathname !== '/')
  ) {
    return 'must be only a scheme, a host and an optional port';
  }
  if (parsed.port !== '' && Number(parsed.port) === 0) return 'has port 0';
  return undefined;
}

/** The read result: every documented field with its default, no secrets. */
function shown(value: LdapConfigValue, lastRotation: number | undefined): Record<string, unknown> {
  return {
    binddn: value.binddn,
    url: value.url,
    userdn: value.userdn,
    userattr: value.userattr,
    upndomain: value.upndomain,
    schema: value.schema,
    password_policy: value.password_policy,
    length: value.length || (value.password_policy ? 0 : defaultPasswordLength),
    request_timeout: value.request_timeout || 90,
    connection_timeout: value.connection_timeout || 30,
    starttls: value.starttls,
    insecure_tls: value.insecure_tls,
    certificate: value.certificate,
    client_tls_cert: value.client_tls_cert,
    tls_min_version: value.tls_min_version,
    tls_max_version: value.tls_max_version,
    case_sensitive_names: value.case_sensitive_names,
    skip_static_role_import_rotation: value.skip_static_role_import_rotation,
    rotation_period: value.rotation_period,
    rotation_schedule: value.rotation_schedule,
    rotation_window: value.rotation_window,
    disable_automated_rotation: value.disable_automated_rotation,
    ...(lastRotation
      ? {
          last_bind_password_rotation: new Date(lastRotation * 1000).toISOString(),
        }
      : {}),
  };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined)) as Partial<T>;
}
