import { api, scheduler, secrets } from '../api.ts';
import { clearSession, getSession, type Service } from '../session.ts';

/**
 * Forgets the service's token; revokes it first only if a login here made it (a pasted token belongs to whoever
 * made it and stays valid). A failed revocation still forgets the token: the person asked to be signed out.
 */
export async function signOut(service: Service): Promise<void> {
  const session = getSession(service);
  if (session?.createdByConsole) {
    try {
      if (service === 'secrets') await secrets('POST', api`auth/token/revoke-self`);
      else await scheduler('POST', api`acl/logout`);
    } catch {
      // forgotten below all the same
    }
  }
  clearSession(service);
}
