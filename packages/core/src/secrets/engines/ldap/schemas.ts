import { Attribute, Change } from 'ldapts';

/**
 * The directory flavours the engine speaks, and the exact modify operation each needs to set a password
 * (Vault's openldap plugin field registry).
 */

export const schemaNames = ['openldap', 'ad', 'racf'] as const;
export type SchemaName = (typeof schemaNames)[number];

/** Attribute searched for a user name when the config names none. */
export const defaultUserAttr: Record<SchemaName, string> = {
  openldap: 'cn',
  ad: 'userPrincipalName',
  racf: 'racfid',
};

/** RACF passwords are at most 8 characters; longer secrets are pass phrases. */
export const racfMaxPasswordLength = 8;

/** Active Directory takes `unicodePwd` as the password in double quotes, UTF-16LE encoded. */
export function adPasswordValue(password: string): Buffer {
  return Buffer.from(`"${password}"`, 'utf16le');
}

/** The modify request that sets `password` on an entry of this schema. */
export function passwordChanges(schema: SchemaName, password: string): Change[] {
  const replace = (type: string, values: Array<string | Buffer>) =>
    new Change({ operation: 'replace', modification: new Attribute({ type, values: values as string[] | Buffer[] }) });
  switch (schema) {
    case 'openldap':
      return [replace('userPassword', [password])];
    case 'ad':
      return [replace('unicodePwd', [adPasswordValue(password)])];
    case 'racf':
      return [
        replace(password.length > racfMaxPasswordLength ? 'racfPassPhrase' : 'racfPassword', [password]),
        replace('racfAttributes', ['noexpired']),
      ];
  }
}
