import type { Service } from '../session.ts';

/**
 * An OIDC sign-in under way in this tab, kept in session storage across the trip to the provider: which service and
 * method, the `state` the service put in the authorization URL, the client nonce only this tab knows, and where to
 * go after. The callback page finishes a sign-in only when the `state` it is given is this one.
 */
export interface PendingOidc {
  service: Service;
  /** The secrets service's auth mount path, or the scheduler's auth method name. */
  method: string;
  role: string;
  state: string;
  clientNonce: string;
  redirectUri: string;
  next: string;
}

const key = 'keyhaven.oidc.pending';

export function savePending(pending: PendingOidc): void {
  sessionStorage.setItem(key, JSON.stringify(pending));
}

export function readPending(): PendingOidc | undefined {
  try {
    const pending = JSON.parse(sessionStorage.getItem(key) ?? 'null') as PendingOidc | null;
    return pending && typeof pending.state === 'string' && pending.state ? pending : undefined;
  } catch {
    return undefined;
  }
}

export function clearPending(): void {
  sessionStorage.removeItem(key);
}

/** 32 random bytes as hex, from the browser's CSPRNG. */
export function randomNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** Where to go after signing in: only a page of the console (never another origin). */
export function safeNext(next: string | null | undefined): string {
  return next?.startsWith('/ui/') ? next : '/ui/';
}

/** The console's own address for a path (the redirect URIs the services must allow). */
export const consoleAddress = (path: string) => `${location.origin}${path}`;

export const secretsCallbackPath = (mount: string) => `/ui/vault/auth/${encodeURIComponent(mount)}/oidc/callback`;
export const schedulerCallbackPath = '/ui/settings/tokens';
