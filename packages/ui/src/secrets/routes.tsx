import type { NavEntry, RouteDef } from '../router.tsx';

/** The secrets service's pages: mounts and kv, leases, policies, tokens, audit, capabilities. */
export const secretsRoutes: RouteDef[] = [];
export const secretsNav: NavEntry[] = [];
