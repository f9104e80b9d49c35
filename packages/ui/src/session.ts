/**
 * The signed-in tokens, one per service, in session storage only (gone with the tab; no cookies). A token the console
 * made by a login is revoked at sign-out; a token the person pasted is only forgotten.
 */
export type Service = 'secrets' | 'scheduler';

export interface Session {
  token: string;
  /** True when a login made this token here; sign-out then revokes it. */
  createdByConsole: boolean;
  /** What the service says of the token: display name, policies. */
  displayName?: string;
  policies?: string[];
}

const storageKey = (service: Service) => `keyhaven.${service}.session`;
const listeners = new Set<() => void>();

export function getSession(service: Service): Session | undefined {
  const text = sessionStorage.getItem(storageKey(service));
  if (!text) return undefined;
  try {
    return JSON.parse(text) as Session;
  } catch {
    return undefined;
  }
}

export function setSession(service: Service, session: Session): void {
  sessionStorage.setItem(storageKey(service), JSON.stringify(session));
  for (const listener of listeners) listener();
}

export function clearSession(service: Service): void {
  sessionStorage.removeItem(storageKey(service));
  for (const listener of listeners) listener();
}

export function onSessionChange(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export const serviceNames: Record<Service, string> = { secrets: 'Secrets service', scheduler: 'Scheduler service' };
