import type { NavEntry, RouteDef } from '../router.tsx';
import { cloudConfig, impersonatedAccounts, rolesets, staticAccounts } from './cloud/engine.tsx';
import { configRoute } from './config-page.tsx';
import { genericEngineRoute } from './generic-engine.tsx';
import { dynamicRoles, ldapConfig, librarySets, staticRoles } from './ldap/engine.tsx';
import { meshConfig, meshRoles } from './mesh/engine.tsx';
import { collectionRoutes } from './role-list.tsx';

const configPages = [ldapConfig, cloudConfig, meshConfig];

/** The mount types with pages of their own; a mount of any other engine type has the generic page. */
export const enginePageTypes: ReadonlySet<string> = new Set(configPages.map((def) => def.engine.kind));

/**
 * The secrets engines' pages: directory (`/ui/vault/ldap/<mount>`), cloud (`/ui/vault/cloud/<mount>`) and mesh
 * (`/ui/vault/mesh/<mount>`), each its configuration and its collections; any other engine's mount on the generic
 * page (`/ui/vault/engine/<mount>`, from the service's OpenAPI document); the menu links the dev mounts.
 */
export const engineRoutes: RouteDef[] = [
  genericEngineRoute,
  ...configPages.map(configRoute),
  ...[staticRoles, dynamicRoles, librarySets, rolesets, staticAccounts, impersonatedAccounts, meshRoles].flatMap(
    collectionRoutes,
  ),
];

export const engineNav: NavEntry[] = [
  { href: '/ui/vault/ldap/ldap', label: 'Directory (ldap/)' },
  { href: '/ui/vault/cloud/cloud', label: 'Cloud (cloud/)' },
  { href: '/ui/vault/mesh/mesh', label: 'Mesh (mesh/)' },
];
