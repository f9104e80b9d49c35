import type { NavEntry, RouteDef } from '../router.tsx';
import { cloudConfig, impersonatedAccounts, rolesets, staticAccounts } from './cloud/engine.tsx';
import { configRoute } from './config-page.tsx';
import { dynamicRoles, ldapConfig, librarySets, staticRoles } from './ldap/engine.tsx';
import { meshConfig, meshRoles } from './mesh/engine.tsx';
import { collectionRoutes } from './role-list.tsx';

/**
 * The secrets engines' pages: directory (`/ui/vault/ldap/<mount>`), cloud (`/ui/vault/cloud/<mount>`) and mesh
 * (`/ui/vault/mesh/<mount>`), each its configuration and its collections; the menu links the dev mounts.
 */
export const engineRoutes: RouteDef[] = [
  ...[ldapConfig, cloudConfig, meshConfig].map(configRoute),
  ...[staticRoles, dynamicRoles, librarySets, rolesets, staticAccounts, impersonatedAccounts, meshRoles].flatMap(
    collectionRoutes,
  ),
];

export const engineNav: NavEntry[] = [
  { href: '/ui/vault/ldap/ldap', label: 'Directory (ldap/)' },
  { href: '/ui/vault/cloud/cloud', label: 'Cloud (cloud/)' },
  { href: '/ui/vault/mesh/mesh', label: 'Mesh (mesh/)' },
];
