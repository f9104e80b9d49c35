/**
 * The dry run of a login's binding, `POST /v1/acl/binding-rules/evaluate` (its row is in `routes.ts`): its body, the
 * checks of its input (400 naming what is wrong), and its answer from the login's own evaluation (`bind.ts`): per
 * rule whether it matched and why not (each top-level term of its selector), and the roles, policies or management
 * the token would get, or the error the login would answer instead. Nothing here verifies, mints or writes.
 */
import * as z from 'zod/mini';
import { badRequest } from '../../../lib/errors.ts';
import type { Claims } from '../../../lib/jwt/claims.ts';
import type { AclAuthMethod } from '../auth-methods/model.ts';
import { type ClaimVariables, tokenName } from '../interpolate.ts';
import type { BindingOutcome } from './bind.ts';

export const evaluateBody = z.object({
  AuthMethodName: z
    .optional(z.string())
    .check(z.describe('The auth method whose binding rules are evaluated (JWT or OIDC).')),
  Claims: z
    .optional(z.unknown())
    .check(
      z.describe(
        'The claims a login would carry, as a JSON object (a JWT payload, or an OIDC ID token merged with UserInfo); they are mapped as a login maps them.',
      ),
    ),
});

/** The method name and the claims of a dry run; 400 naming what is missing or not an object. */
export function evaluateInput(body: z.infer<typeof evaluateBody>): { name: string; claims: Claims } {
  const name = body.AuthMethodName ?? '';
  if (!name) throw badRequest('AuthMethodName is missing');
  const claims = body.Claims;
  if (claims === undefined) throw badRequest('Claims is missing');
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims))
    throw badRequest('Claims must be a JSON object');
  return { name, claims: claims as Claims };
}

/** The dry run's answer: what the login would bind, and the token's name or the login's error. */
export function dryRunAnswer(method: AclAuthMethod, variables: ClaimVariables, bound: BindingOutcome) {
  const nothing = !bound.Management && bound.Roles.length === 0 && bound.Policies.length === 0;
  let TokenName: string | undefined;
  let LoginError = bound.failure?.message ?? (nothing ? 'no role or policy bindings matched' : undefined);
  if (!LoginError) {
    try {
      TokenName = tokenName(method.TokenNameFormat, variables, method);
    } catch (error) {
      LoginError = (error as Error).message;
    }
  }
  return {
    AuthMethodName: method.Name,
    AuthMethodType: method.Type,
    Variables: variables,
    Rules: bound.Rules,
    Management: bound.Management,
    Roles: bound.Management ? [] : bound.Roles,
    Policies: bound.Management ? [] : bound.Policies,
    ...(TokenName !== undefined ? { TokenName } : {}),
    ...(LoginError ? { LoginError } : {}),
  };
}
