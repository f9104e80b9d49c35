import * as z from 'zod';
import { type Backend, type Request, path } from '../../../http/backend.ts';
import { badRequest } from '../../../http/errors.ts';
import { DurationError, parseDuration } from '../../../lib/duration.ts';

/**
 * `kv` (version 1): arbitrary JSON secrets at any path, sealed at rest. As in Vault's leased key/value
 * store, a secret written with a `ttl` is read out under a renewable lease of that duration.
 */
const fields = z.object({ path: z.string().default('') }).catchall(z.unknown());

export const kvBackend: Backend = {
  type: 'kv',
  kind: 'secret',
  paths: [
    path({
      pattern: ':path*',
      fields,
      exists: async ({ storage, data }) => (await storage.get(key(data.path))) !== undefined,
      prefetch: (params) => (key(params.path ?? '') === '' ? [] : [key(params.path ?? '')]),
      operations: {
        read: async ({ storage, data }) => {
          const secret = await readSecret(storage, data.path);
          if (!secret) return undefined;
          const ttl = secret.ttl ?? secret.lease;
          if (ttl === undefined) return { data: secret };
          return { data: secret, secret: { type: 'kv', ttl: parseDuration(ttl), renewable: true, internal: {} } };
        },
        create: write,
        update: write,
        delete: async ({ storage, data }) => {
          await storage.delete(key(data.path));
          return undefined;
        },
        list: async ({ storage, data }) => ({ data: { keys: await storage.list(data.path === '' ? '' : data.path.replace(/\/?$/, '/')) } }),
      },
    }),
  ],
  leases: {
    // A read of a static secret holds nothing to take back: revoking the lease only ends it.
    kv: { revoke: async () => {} },
  },
};

const key = (path: string) => path.replace(/\/+$/, '');

async function write(request: Request<z.output<typeof fields>>) {
  // The secret is the body as sent: a field called `path` is data like any other, not the URL's capture.
  const { path } = request.data;
  const secret = request.body;
  if (key(path) === '') throw badRequest('a secret needs a path, e.g. secret/my-app');
  if (Object.keys(secret).length === 0) throw badRequest('no data provided');
  const ttl = secret.ttl ?? secret.lease;
  if (ttl !== undefined) {
    try {
      parseDuration(ttl);
    } catch (error) {
      if (error instanceof DurationError) throw badRequest(`invalid value for "ttl": ${error.message}`);
      throw error;
    }
  }
  await request.storage.put(key(path), { sealed: request.storage.seal(key(path), JSON.stringify(secret)) });
  return undefined;
}

async function readSecret(storage: Request['storage'], path: string): Promise<Record<string, unknown> | undefined> {
  if (key(path) === '') return undefined;
  const stored = await storage.get<{ sealed: string }>(key(path));
  return stored && (JSON.parse(storage.open(key(path), stored.sealed)) as Record<string, unknown>);
}
