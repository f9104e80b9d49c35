import type { Backend } from '../../framework/backend.ts';
import { configPaths } from './config.ts';
import { loginPaths } from './login.ts';
import { renewLogin } from './login-result.ts';
import { oidcPaths } from './oidc.ts';
import { rolePaths } from './roles.ts';

const paths = [...configPaths, ...rolePaths, ...loginPaths, ...oidcPaths];

/** The JWT/OIDC login method (`sys/auth/<path>` with type `jwt`), Vault's `vault-plugin-auth-jwt`. */
export const jwtBackend: Backend = { type: 'jwt', kind: 'auth', paths, renewLogin };

/** Vault registers the same method under type `oidc` too. */
export const oidcBackend: Backend = { type: 'oidc', kind: 'auth', paths, renewLogin };
