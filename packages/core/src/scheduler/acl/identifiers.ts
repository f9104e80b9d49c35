/**
 * The shapes of the names and IDs that become table keys, checked before they reach one (DynamoDB refuses an empty
 * key and sort keys over 1024 bytes). The limits are Nomad's (`nomad/structs`): policy and auth-method names are
 * 1–128 letters, digits and dashes; accessor, role and binding-rule IDs are UUIDs. Role names also take underscores,
 * as this service's API reference says.
 */
import { badRequest } from '../../lib/errors.ts';

export const validPolicyName = /^[a-zA-Z0-9-]{1,128}$/;
export const validAuthMethodName = /^[a-zA-Z0-9-]{1,128}$/;
export const validRoleName = /^[a-zA-Z0-9_-]{1,128}$/;
export const validUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const nameRule = '1 to 128 letters, digits and dashes';

/** A value as an error message may quote it: long input is cut, so a reply never echoes kilobytes back. */
export function shown(value: string): string {
  return value.length <= 64 ? value : `${value.slice(0, 64)}… (${value.length} characters)`;
}

function requireShape(value: string, pattern: RegExp, field: string, rule: string): string {
  if (!pattern.test(value)) throw badRequest(`invalid ${field} '${shown(value)}': ${rule}`);
  return value;
}

export const requirePolicyName = (value: string, field = 'ACL policy name') => requireShape(value, validPolicyName, field, nameRule);
export const requireAuthMethodName = (value: string, field = 'ACL auth-method name') =>
  requireShape(value, validAuthMethodName, field, nameRule);
export const requireRoleName = (value: string, field = 'ACL role name') =>
  requireShape(value, validRoleName, field, '1 to 128 letters, digits, dashes and underscores');
export const requireUuid = (value: string, field: string) => requireShape(value, validUuid, field, 'must be a UUID');
