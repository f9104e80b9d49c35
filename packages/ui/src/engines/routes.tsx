import type { NavEntry, RouteDef } from '../router.tsx';

/** The secrets engines' pages: directory (`/ui/vault/ldap/<mount>`), cloud and mesh. */
export const engineRoutes: RouteDef[] = [];
export const engineNav: NavEntry[] = [];
