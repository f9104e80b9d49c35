/**
 * `POST /v1/acl/binding-rules/evaluate`: a dry run of a login's binding. It takes an auth method and the claims a
 * login would carry, maps them through the method's ClaimMappings and ListClaimMappings and evaluates the method's
 * rules with the login's own code (`login.ts` `mapClaims`, `bind.ts` `bindClaims`), answering per rule whether it
 * matched and why not (each top-level term of its selector), and the roles, policies or management the token would
 * get. Management only; nothing is verified (no JWT), minted, written or audited as a login.
 */
import * as z from 'zod';
import { badRequest } from '../../../lib/errors.ts';
import type { Claims } from '../../../lib/jwt/claims.ts';
import { type SchedulerRoute, route } from '../../http/route.ts';
import { tokenName } from '../interpolate.ts';
import { mapClaims } from '../login.ts';
import { bindClaims } from './bind.ts';

export const evaluateBody = z.object({
  AuthMethodName: z.string().optional().describe('The auth method whose binding rules are evaluated (JWT or OIDC).'),
  Claims: z
    .unknown()
    .optional()
    .describe('The claims a login would carry, as a JSON object (a JWT payload, or an OIDC ID token merged with UserInfo); they are mapped as a login maps them.'),
});

export const evaluateRoute: SchedulerRoute = route({
  method: 'POST',
  path: '/v1/acl/binding-rules/evaluate',
  summary: 'Evaluate an auth method’s binding rules against a set of claims, as a login would, without logging in.',
  description:
    'A dry run for debugging selectors: the claims are not verified, no token is minted and nothing is written. ' +
    'Answers each rule of the method (Matched, and each top-level `and`/`or` term of its selector with its result), ' +
    'the roles, policies and management a login with these claims would get, and the error such a login would answer instead of a token.',
  access: 'management',
  body: evaluateBody,
  returns:
    'AuthMethodName, the mapped claims (Variables: `value`, `list`), Rules (ID, Description, Selector, Matched, Combine, Terms [{Text, Matched, Error}], ' +
    'Error, BindType, BindName interpolated, RoleMissing, BindNameError), Roles [{ID, Name}], Policies, Management, TokenName, and LoginError when the login would fail.',
  handler: async ({ scheduler, body }) => {
    const name = body.AuthMethodName ?? '';
    if (!name) throw badRequest('AuthMethodName is missing');
    const claims = body.Claims;
    if (claims === undefined) throw badRequest('Claims is missing');
    if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) throw badRequest('Claims must be a JSON object');
    const method = await scheduler.authMethods.get(name);
    if (!method) throw badRequest(`auth method ${name} not found`);
    const variables = mapClaims(method, claims as Claims);
    const bound = await bindClaims(scheduler, method, variables, true);
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
      json: {
        AuthMethodName: method.Name,
        AuthMethodType: method.Type,
        Variables: variables,
        Rules: bound.Rules,
        Management: bound.Management,
        Roles: bound.Management ? [] : bound.Roles,
        Policies: bound.Management ? [] : bound.Policies,
        ...(TokenName !== undefined ? { TokenName } : {}),
        ...(LoginError ? { LoginError } : {}),
      },
    };
  },
});
