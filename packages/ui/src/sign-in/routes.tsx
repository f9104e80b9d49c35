import type { RouteDef } from '../router.tsx';
import { SchedulerTokensPage, SecretsOidcCallback } from './callback.tsx';
import { SignInPage } from './page.tsx';

/** Sign-in pages, and the pages OIDC providers send the browser back to (Vault's and Nomad's UI paths). */
export const signInRoutes: RouteDef[] = [
  { pattern: '/ui/sign-in', title: 'Sign in', view: () => <SignInPage /> },
  {
    pattern: '/ui/vault/auth/:mount/oidc/callback',
    title: 'OIDC sign-in',
    view: ({ mount }) => <SecretsOidcCallback mount={mount ?? ''} />,
  },
  {
    pattern: '/ui/settings/tokens',
    title: 'Scheduler sign-in',
    view: () => <SchedulerTokensPage signIn={() => <SignInPage service="scheduler" />} />,
  },
];
