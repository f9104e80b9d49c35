import { apiPath } from './paths.ts';

/** The generic engine page's address for a mount (the mount one segment, a slash in it encoded). */
export const genericEngineHref = (mount: string): string =>
  `/ui/vault/engine/${encodeURIComponent(mount.replace(/\/+$/, ''))}`;

/**
 * Where a mount's pages are: kv's browser, an engine with pages of its own (`pageTypes`: directory, cloud, mesh) on
 * them, and any other engine type, one the console was not written for, on the generic page that the service's
 * OpenAPI document describes (engines/generic-engine.tsx).
 */
export function mountHref(path: string, type: string, pageTypes: ReadonlySet<string>): string {
  if (type === 'kv') return `/ui/vault/secrets/${apiPath(path)}`;
  // The engines' pages take the mount as one address segment (`team/ldap` is `team%2Fldap`).
  if (pageTypes.has(type)) return `/ui/vault/${type}/${encodeURIComponent(path.replace(/\/+$/, ''))}/`;
  return genericEngineHref(path);
}
