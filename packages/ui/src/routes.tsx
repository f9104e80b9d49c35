import { engineNav, engineRoutes } from './engines/routes.tsx';
import { HomePage } from './home.tsx';
import type { NavEntry, RouteDef } from './router.tsx';
import { schedulerNav, schedulerRoutes } from './scheduler/routes.tsx';
import { secretsNav, secretsRoutes } from './secrets/routes.tsx';
import type { Service } from './session.ts';
import { signInRoutes } from './sign-in/routes.tsx';

/** Every page of the console; the first pattern that matches the address wins. */
export const routes: RouteDef[] = [
  { pattern: '/ui/', title: 'Home', view: () => <HomePage /> },
  ...signInRoutes,
  ...secretsRoutes,
  ...engineRoutes,
  ...schedulerRoutes,
];

export const nav: Record<Service, NavEntry[]> = {
  secrets: [...secretsNav, ...engineNav],
  scheduler: schedulerNav,
};
