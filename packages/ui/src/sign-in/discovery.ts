import { api, scheduler, secrets } from '../api.ts';

/**
 * How the sign-in page learns the ways to sign in before anyone has a token, as Vault's and Nomad's UIs do: the
 * secrets service's `sys/internal/ui/mounts` (auth methods tuned with `listing_visibility: "unauth"`) and the
 * scheduler's `acl/auth-methods` (open to anyone). Both are asked without a token.
 */
export interface SecretsAuthMount {
  /** The mount path without its trailing slash: `jwt`, `corp/sso`. */
  path: string;
  type: string;
  description: string;
}

export interface SchedulerAuthMethod {
  Name: string;
  Type: string;
  Default: boolean;
}

/** The listed auth mounts of the JWT/OIDC family (the only ones with a browser login). */
export async function secretsJwtMounts(): Promise<SecretsAuthMount[]> {
  const answer = await secrets<{ data?: { auth?: Record<string, { type?: string; description?: string }> } }>(
    'GET',
    api`sys/internal/ui/mounts`,
    undefined,
    { token: null },
  );
  return Object.entries(answer?.data?.auth ?? {})
    .filter(([, mount]) => mount.type === 'jwt' || mount.type === 'oidc')
    .map(([path, mount]) => ({
      path: path.replace(/\/+$/, ''),
      type: mount.type ?? '',
      description: mount.description ?? '',
    }))
    .sort((a, b) => a.path.localeCompare(b.path));
}

/** The scheduler's auth methods of one type (`OIDC` or `JWT`), the default first. */
export async function schedulerMethods(type: 'OIDC' | 'JWT'): Promise<SchedulerAuthMethod[]> {
  const answer = await scheduler<SchedulerAuthMethod[] | null>('GET', api`acl/auth-methods`, undefined, {
    token: null,
  });
  return (answer ?? [])
    .filter((method) => method.Type === type)
    .sort((a, b) => Number(b.Default) - Number(a.Default) || a.Name.localeCompare(b.Name));
}
