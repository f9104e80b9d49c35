import type { Backend } from '../../framework/backend.ts';
import { configPaths } from './config.ts';
import { loginPaths } from './login.ts';
import { renewLogin } from './login-result.ts';
import { oidcPaths } from './oidc.ts';
import { rolePaths } from './roles.ts';

const paths = [...configPaths, ...rolePaths, ...loginPaths, ...oidcPaths];
const deployment = {
  throttled: { login: 'login', 'oidc/auth_url': 'login', 'oidc/callback': 'login' },
} satisfies Backend['deployment'];

/** The JWT/OIDC login method (`sys/auth/<path>` with type `jwt`), Vault's `vault-plugin-auth-jwt`. */
export const jwtBackend: Backend = { type: 'jwt', kind: 'auth', paths, renewLogin, deployment };

/** Vault registers the same method under type `oidc` too. */
export const oidcBackend: Backend = { type: 'oidc', kind: 'auth', paths, renewLogin, deployment };
