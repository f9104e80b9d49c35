import type { NavEntry, RouteDef } from '../router.tsx';

/** The scheduler service's pages: ACL tokens, policies, roles, auth methods, binding rules, the rule tester, events. */
export const schedulerRoutes: RouteDef[] = [];
export const schedulerNav: NavEntry[] = [];
