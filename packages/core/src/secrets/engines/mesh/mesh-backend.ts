import { authenticatedValueKind } from '../../mounts/mount-storage.ts';
import type { Backend } from '../../framework/backend.ts';
import { configPaths } from './config-access.ts';
import { credsPaths, tokenLease } from './creds.ts';
import { rolePaths } from './roles.ts';

/**
 * `mesh`: dynamic ACL tokens on a Consul-compatible service-mesh server (Vault's Consul secrets engine):
 * `config/access`, `roles/:name`, `creds/:name`, and the `token` lease that deletes what `creds` made.
 */
export const meshBackend: Backend = {
  type: 'mesh',
  kind: 'secret',
  paths: [...configPaths, ...rolePaths, ...credsPaths],
  // Its items, with their protection (the rows of item-kinds.ts and docs/security.md for a mesh mount).
  storedItems: [
    {
      name: 'mesh access and roles',
      where: '`mount#<uuid>` / `config/access`, `role/<name>`',
      sk: /^(config\/access|role\/.*)$/,
      protection: 'MAC',
      mac: authenticatedValueKind,
      why: "where the sealed management token goes, and which mesh policies a role's tokens get",
    },
  ],
  leases: { token: tokenLease },
  // Revoking a lease deletes the token on the mesh server: a job of its own, in this engine's bundle.
  deployment: { ownJob: true, throttled: { 'creds/{proxy+}': 'credentials' } },
};
