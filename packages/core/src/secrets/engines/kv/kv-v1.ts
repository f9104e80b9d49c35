import * as z from 'zod';
import { DurationError, parseDuration } from '../../../lib/duration.ts';
import { badRequest } from '../../../lib/errors.ts';
import type { Handler, Request } from '../../framework/backend.ts';
import { typeString } from '../../framework/vault-field-types.ts';

/**
 * `kv` version 1: arbitrary JSON secrets at any path, sealed at rest. As in Vault's leased key/value store, a secret
 * written with a `ttl` is read out under a renewable lease of that duration.
 */
export const v1Fields = z
  .object({
    path: typeString
      .pipe(z.string())
      .default('')
      .describe("Location of the secret; a write's body, whatever its fields, is the secret."),
  })
  .catchall(z.unknown());
type V1Data = z.output<typeof v1Fields>;

export const v1Key = (path: string) => path.replace(/\/+$/, '');

export const v1Exists = async ({ storage, data }: Request<V1Data>) =>
  (await storage.get(v1Key(data.path))) !== undefined;

export const v1Operations: Record<'read' | 'create' | 'update' | 'delete' | 'list', Handler<V1Data>> = {
  read: async ({ storage, data }) => {
    const secret = await readV1Secret(storage, data.path);
    if (!secret) return undefined;
    const ttl = secret.ttl ?? secret.lease;
    if (ttl === undefined) return { data: secret };
    return { data: secret, secret: { type: 'kv', ttl: parseDuration(ttl), renewable: true, internal: {} } };
  },
  create: write,
  update: write,
  delete: async ({ storage, data }) => {
    await storage.delete(v1Key(data.path));
    return undefined;
  },
  list: async ({ storage, data }) => ({
    data: { keys: await storage.list(data.path === '' ? '' : data.path.replace(/\/?$/, '/')) },
  }),
};

async function write(request: Request<V1Data>) {
  // The secret is the body as sent: a field called `path` is data like any other, not the URL's capture.
  const { path } = request.data;
  const secret = request.body;
  if (v1Key(path) === '') throw badRequest('a secret needs a path, e.g. secret/my-app');
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
  await request.storage.put(v1Key(path), { sealed: request.storage.seal(v1Key(path), JSON.stringify(secret)) });
  return undefined;
}

export async function readV1Secret(
  storage: Request['storage'],
  path: string,
): Promise<Record<string, unknown> | undefined> {
  if (v1Key(path) === '') return undefined;
  const stored = await storage.get<{ sealed: string }>(v1Key(path));
  return stored && (JSON.parse(storage.open(v1Key(path), stored.sealed)) as Record<string, unknown>);
}
