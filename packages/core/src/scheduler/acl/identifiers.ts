/**
 * The shapes of the names and IDs that become table keys, checked before they reach one (DynamoDB refuses an empty
 * key and sort keys over 1024 bytes). The limits are Nomad's (`nomad/structs`): policy and auth-method names are
 * 1–128 letters, digits and dashes; accessor, role and binding-rule IDs are UUIDs. Role names also take underscores,
 * as this service's API reference says. A path parameter is checked by the route wrapper with `shapedParameter`
 * (`scheduler/http/route.ts`); a body field by `requireAuthMethodName`.
 */
import * as z from 'zod/mini';
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

const refusal = (value: string, field: string, rule: string) => `invalid ${field} '${shown(value)}': ${rule}`;

/** A body field naming an auth method (a login's `AuthMethodName`): the name, or a 400 saying what is wrong. */
export function requireAuthMethodName(value: string, field: string): string {
  if (!validAuthMethodName.test(value)) throw badRequest(refusal(value, field, nameRule));
  return value;
}

/** A path parameter of a given shape, described for the OpenAPI document; a mismatch is a 400 naming `field`. */
const shapedParameter = (pattern: RegExp, field: string, rule: string, description: string) =>
  z.string().check(
    z.refine((value) => pattern.test(value), { error: (issue) => refusal(String(issue.input), field, rule) }),
    z.describe(description),
  );

export const policyNameParameter = (description: string) =>
  shapedParameter(validPolicyName, 'ACL policy name', nameRule, description);
export const authMethodNameParameter = (description: string) =>
  shapedParameter(validAuthMethodName, 'ACL auth-method name', nameRule, description);
export const roleNameParameter = (description: string) =>
  shapedParameter(validRoleName, 'ACL role name', '1 to 128 letters, digits, dashes and underscores', description);
export const uuidParameter = (field: string, description: string) =>
  shapedParameter(validUuid, field, 'must be a UUID', description);
