/**
 * The system routes whose answers Vault's HTTP layer repeats at the top level: `injectDataIntoTopRoutes` in Vault's
 * `http/handler.go`, answered through `handleLogicalWithInjector` (`http/logical.go`), whose `HTTPSysInjector` writes
 * each field of `data` before the envelope's own (so on a clash the envelope's field is the one a client reads).
 * Clients written before the envelope read the fields there: the MariaDB key-management plugin reads `options.version`
 * of `sys/mounts/:path/tune`, node-vault the `rules` of `sys/policy/:name`.
 *
 * The list as Vault registers it with Go's ServeMux: a route ending in `/` stands for every path under it, any other
 * for itself alone. Routes Keyhaven does not serve (`sys/config/cors`, `sys/rekey/backup`, …) are listed all the same,
 * so that the list reads as Vault's and a route served later gets the same answer without another edit.
 */
export const vaultTopLevelRoutes: readonly string[] = [
  'sys/audit',
  'sys/audit/',
  'sys/audit-hash/',
  'sys/auth',
  'sys/auth/',
  'sys/config/cors',
  'sys/config/auditing/request-headers/',
  'sys/config/auditing/request-headers',
  'sys/capabilities',
  'sys/capabilities-accessor',
  'sys/capabilities-self',
  'sys/ha-status',
  'sys/key-status',
  'sys/mounts',
  'sys/mounts/',
  'sys/policy',
  'sys/policy/',
  'sys/rekey/backup',
  'sys/rekey/recovery-key-backup',
  'sys/remount',
  'sys/rotate',
  'sys/wrapping/wrap',
];

const exactRoutes = new Set(vaultTopLevelRoutes.filter((route) => !route.endsWith('/')));
const subtreeRoutes = vaultTopLevelRoutes.filter((route) => route.endsWith('/'));

/**
 * Whether a request's answer carries its data at the top level too. `path` is the canonical path after `/v1/` (no
 * trailing `/`: the front removed it, and Vault's subtree route also answers the path it names, `sys/mounts/`).
 */
export function injectsDataAtTopLevel(path: string): boolean {
  return exactRoutes.has(path) || subtreeRoutes.some((route) => path.startsWith(route));
}
