import type { JSX } from 'preact';
import type { Service } from '../session.ts';
import { JwtSignIn } from './jwt.tsx';
import { OidcSignIn } from './oidc.tsx';
import { TokenSignIn } from './token.tsx';

/** The ways to sign in to each service, as tabs of the sign-in page. */
export interface SignInMethod {
  id: string;
  label: string;
  view: (props: { service: Service; onSignedIn: () => void }) => JSX.Element;
}

export const signInMethods: Record<Service, SignInMethod[]> = {
  secrets: [
    { id: 'token', label: 'Token', view: TokenSignIn },
    { id: 'oidc', label: 'OIDC', view: OidcSignIn },
    { id: 'jwt', label: 'JWT', view: JwtSignIn },
  ],
  scheduler: [
    { id: 'token', label: 'Token', view: TokenSignIn },
    { id: 'oidc', label: 'OIDC', view: OidcSignIn },
    { id: 'jwt', label: 'JWT', view: JwtSignIn },
  ],
};
