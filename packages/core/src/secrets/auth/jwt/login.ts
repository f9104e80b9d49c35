import * as z from 'zod';
import { epochSeconds } from '../../../lib/clock.ts';
import { badRequest } from '../../../lib/errors.ts';
import { ClaimError } from '../../../lib/jwt/claims.ts';
import { TokenInvalid } from '../../../lib/jwt/keys.ts';
import { verifyJwt } from '../../../lib/jwt/verify.ts';
import { path, type Reply, type Request } from '../../framework/backend.ts';
import { loadConfig } from './config.ts';
import { keySource, loginAlgorithms } from './keys.ts';
import { finishLogin, requireAllowedAddress } from './login-result.ts';
import { loadRole, roleName } from './roles.ts';
import { typeString } from '../../framework/vault-field-types.ts';

const fields = z.object({
  role: typeString
    .pipe(z.string())
    .optional()
    .describe(
      'Name of the role against which the login is being attempted. Defaults to the configured default_role if not provided.',
    ),
  jwt: typeString.pipe(z.string()).optional().describe('The signed JWT to validate.'),
});

/** `auth/<mount>/login`: a signed JWT for a token. */
export const loginPaths = [
  path({
    pattern: 'login',
    fields,
    unauthenticated: true,
    summaries: { update: 'Authenticates to Vault using a JWT (or OIDC) token.' },
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

  try {
    const claims = await verifyJwt(
      jwt,
      { version: config.version, source: keySource(config) },
      {
        algorithms: loginAlgorithms(config),
        issuers: config.bound_issuer ? [config.bound_issuer] : [],
        subject: role.bound_subject,
        audiences: role.bound_audiences,
        refuseUnexpectedAudience: true,
        leeways: {
          clockSkew: role.clock_skew_leeway,
          expiration: role.expiration_leeway,
          notBefore: role.not_before_leeway,
        },
        now: epochSeconds(request.system.clock),
      },
    );
    return await finishLogin(request, role, roleName(name), claims);
  } catch (error) {
    if (error instanceof TokenInvalid) throw badRequest(`error validating token: ${error.message}`);
    if (error instanceof ClaimError) throw badRequest(error.message);
    throw error;
  }
}
