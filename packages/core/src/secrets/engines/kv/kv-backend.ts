import { notFound, unsupported } from '../../../lib/errors.ts';
import type { Backend, Handler, Operation, PathSpec, Request } from '../../framework/backend.ts';
import { path } from '../../framework/backend.ts';
import { ensureUpgraded } from './kv-upgrade.ts';
import { v1Exists, v1Fields, v1Key, v1Operations } from './kv-v1.ts';
import { kvV2Paths } from './kv-v2-paths.ts';
import { isKvV2 } from './kv-version.ts';

/**
 * `kv`: Vault's key/value engine in both versions, chosen per mount by `options.version` (`sys/mounts`, upgraded by
 * `sys/mounts/:path/tune`). Version 2's rows (`data/`, `metadata/`, `delete/`, …) come first; on a version 1 mount
 * they hand the request to version 1, whose paths may start with those words too.
 */
const v2Rows: PathSpec[] = kvV2Paths.map((spec) => ({
  ...spec,
  exists:
    spec.exists &&
    (async (request: Request<unknown>) => {
      if (!isKvV2(request.mount)) return v1Exists(asV1(request));
      await ensureUpgraded(request.storage, request.mount.uuid, request.system.clock.now());
      return spec.exists!(request);
    }),
  operations: Object.fromEntries(
    Object.entries(spec.operations).map(([operation, handler]) => [
      operation,
      async (request: Request<unknown>) => {
        if (isKvV2(request.mount)) {
          await ensureUpgraded(request.storage, request.mount.uuid, request.system.clock.now());
          return (handler as Handler<unknown>)(request);
        }
        const v1 = v1Operations[operation as Exclude<Operation, 'patch'>] as Handler<{ path: string }> | undefined;
        if (!v1)
          throw unsupported(
            `unsupported operation ${operation.toUpperCase()} on "${request.mount.path}${request.path}" (a version 1 kv mount)`,
          );
        return v1(asV1(request));
      },
    ]),
  ),
}));

const asV1 = (request: Request<unknown>) => ({ ...request, data: { path: request.path } });

const wrongPathForV2 = () =>
  notFound(
    "Invalid path for a versioned K/V secrets engine. See the API docs for the appropriate API endpoints to use. If using the Vault CLI, use 'vault kv get' for this operation.",
  );

const v1Row = path({
  pattern: ':path*',
  fields: v1Fields,
  exists: async (request) => (isKvV2(request.mount) ? false : v1Exists(request)),
  summaries: {
    read: 'Read a secret (version 1 mounts; a "ttl" or "lease" field gives a renewable lease of that duration).',
    create: 'Write a secret (version 1 mounts): the request body, whatever its fields, is the secret.',
    update: 'Write a secret (version 1 mounts): the request body, whatever its fields, is the secret.',
    delete: 'Delete a secret (version 1 mounts).',
    list: 'List the secrets and folders under a path (version 1 mounts).',
  },
  prefetch: (params) => (v1Key(params.path ?? '') === '' ? [] : [v1Key(params.path ?? '')]),
  operations: Object.fromEntries(
    Object.entries(v1Operations).map(([operation, handler]) => [
      operation,
      async (request: Request<{ path: string }>) => {
        if (!isKvV2(request.mount)) return handler(request);
        if (operation === 'read') return undefined;
        throw wrongPathForV2();
      },
    ]),
  ),
});

export const kvBackend: Backend = {
  type: 'kv',
  kind: 'secret',
  defaultPath: 'secret',
  paths: [...v2Rows, v1Row],
  // Its items, with their protection (the rows of item-kinds.ts and docs/security.md for a kv mount).
  storedItems: [
    {
      name: 'kv v2 data and metadata',
      where: '`mount#<uuid>` / `kv2/…`',
      sk: /^kv2\//,
      protection: 'sealed',
      why: 'secret values are sealed bound to their key; versions, deletion times and `cas_required` are data about them, not grants',
    },
    {
      name: 'kv v1 data',
      where: '`mount#<uuid>` / `<path>`',
      sk: /./,
      protection: 'sealed',
      why: 'secret values, sealed bound to their key',
    },
  ],
  leases: {
    // A read of a static secret holds nothing to take back: revoking the lease only ends it.
    kv: { revoke: async () => {} },
  },
};
