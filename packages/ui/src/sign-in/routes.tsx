import type { RouteDef } from '../router.tsx';
import { SignInPage } from './page.tsx';

/** Sign-in pages (OIDC callbacks land here too: see `methods.tsx`). */
export const signInRoutes: RouteDef[] = [{ pattern: '/ui/sign-in', title: 'Sign in', view: () => <SignInPage /> }];
