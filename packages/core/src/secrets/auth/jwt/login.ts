import * as z from 'zod';
import { epochSeconds } from '../../../lib/clock.ts';
import { path, type Reply, type Request } from '../../framework/backend.ts';
import { badRequest } from '../../framework/errors.ts';
import { ClaimError, type Claims, checkExpectedClaims, checkTimes } from './claims.ts';
import { clientSecret, loadConfig } from './config.ts';
import { loginAlgorithms, signatureCheck, TokenInvalid } from './keys.ts';
import { finishLogin, requireAllowedAddress } from './login-result.ts';
import { loadRole, roleName } from './roles.ts';

const fields = z.object({
  role: z.string().optional(),
  jwt: z.string().optional(),
});

/** `auth/<mount>/login`: a signed JWT for a token. */
export const loginPaths = [
  path({
    pattern: 'login',
    fields,
    unauthenticated: true,
    operations: { update: (request) => login(request) },
  }),
];

async function login(request: Request<z.output<typeof fields>>): Promise<Reply> {
  const config = await loadConfig(request);
  if (!config) throw badRequest('could not load configuration');
  const name = request.data.role || config.default_role;
  if (!name) throw badRequest("missing role: give 'role' or set 'default_role' in the config");
  const role = await loadRole(request, roleName(name));
  if (!role) throw badRequest(`role "${name}" could not be found`);
  if (role.role_type === 'oidc') throw badRequest('role with oidc role_type is not allowed');
  const jwt = request.data.jwt?.trim();
  if (!jwt) throw badRequest("missing token: the 'jwt' field is required");
  requireAllowedAddress(role, request.clientIp);

  let claims: Claims;
  try {
    const check = await signatureCheck(config, clientSecret(request.storage, config));
    const payload = await check(jwt, loginAlgorithms(config));
    claims = parseClaims(payload);
    checkExpectedClaims(claims, { issuer: config.bound_issuer, subject: role.bound_subject, audiences: role.bound_audiences, strictAudience: true });
    checkTimes(claims, role, epochSeconds(request.core.clock));
    return await finishLogin(request, role, roleName(name), claims);
  } catch (error) {
    if (error instanceof TokenInvalid) throw badRequest(`error validating token: ${error.message}`);
    if (error instanceof ClaimError) throw badRequest(error.message);
    throw error;
  }
}

function parseClaims(payload: Uint8Array): Claims {
  let claims: unknown;
  try {
    claims = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw new TokenInvalid('the JWT payload is not JSON');
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) throw new TokenInvalid('the JWT payload is not a JSON object');
  return claims as Claims;
}
