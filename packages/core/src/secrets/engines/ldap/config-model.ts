import { badRequest } from '../../../lib/errors.ts';
import { generatePassword, randomString } from '../../../lib/password.ts';
import type { MountStorage } from '../../mounts/mount-storage.ts';
import type { LdapEngineContext } from './context.ts';
import type { LdapAccountItem } from './records.ts';
import { defaultUserAttr, type SchemaName } from './schemas.ts';

/** The TLS versions a directory connection may be bounded by (`tls_min_version`, `tls_max_version`). */
export const tlsVersionNames = ['tls10', 'tls11', 'tls12', 'tls13'] as const;
export type TlsVersionName = (typeof tlsVersionNames)[number];

/** The stored config fields, named as in the API; 0 and '' mean "not set" where a default applies. */
export interface LdapConfigValue {
  binddn: string;
  url: string;
  password_policy: string;
  schema: SchemaName;
  userdn: string;
  /** As configured; '' means the schema's default. */
  userattr: string;
  upndomain: string;
  request_timeout: number;
  connection_timeout: number;
  starttls: boolean;
  insecure_tls: boolean;
  certificate: string;
  client_tls_cert: string;
  tls_min_version: TlsVersionName;
  tls_max_version: TlsVersionName;
  case_sensitive_names: boolean;
  skip_static_role_import_rotation: boolean;
  length: number;
  rotation_period: number;
  rotation_schedule: string;
  rotation_window: number;
  disable_automated_rotation: boolean;
}

export const configDefaults: LdapConfigValue = {
  binddn: '',
  url: 'ldap://127.0.0.1',
  password_policy: '',
  schema: 'openldap',
  userdn: '',
  userattr: '',
  upndomain: '',
  request_timeout: 0,
  connection_timeout: 0,
  starttls: false,
  insecure_tls: false,
  certificate: '',
  client_tls_cert: '',
  tls_min_version: 'tls12',
  tls_max_version: 'tls12',
  case_sensitive_names: false,
  skip_static_role_import_rotation: false,
  length: 0,
  rotation_period: 0,
  rotation_schedule: '',
  rotation_window: 0,
  disable_automated_rotation: false,
};

/** What a connection needs: the fields (with `userattr` resolved) and the opened secrets. */
export interface DirectoryConfig {
  fields: LdapConfigValue;
  bindpass: string;
  clientTlsKey?: string;
}

export const configKey = 'config';
export const defaultPasswordLength = 64;

export async function loadConfigItem(storage: MountStorage): Promise<LdapAccountItem | undefined> {
  return storage.getItem<LdapAccountItem>(configKey);
}

/** The config with its secrets opened; `password` overrides the stored bind password (rotation). */
export function directoryConfig(storage: MountStorage, item: LdapAccountItem, password?: string): DirectoryConfig {
  const fields = { ...configDefaults, ...(item.value as Partial<LdapConfigValue>) };
  fields.userattr = fields.userattr || defaultUserAttr[fields.schema];
  const clientKey = item.clientKey as string | undefined;
  return {
    fields,
    bindpass: password ?? (item.password ? storage.open(configKey, item.password) : ''),
    ...(clientKey ? { clientTlsKey: storage.open(`${configKey}#client_tls_key`, clientKey) } : {}),
  };
}

/** A new password: from the configured policy, else the deprecated `length`, else 64 base62 characters. */
export async function newPassword(
  context: Pick<LdapEngineContext, 'passwordPolicy'>,
  config: DirectoryConfig,
): Promise<string> {
  const { password_policy: policyName, length } = config.fields;
  if (policyName) {
    const policy = await context.passwordPolicy(policyName);
    if (!policy) throw badRequest(`password policy "${policyName}" does not exist`);
    return generatePassword(policy);
  }
  return randomString(length || defaultPasswordLength);
}
