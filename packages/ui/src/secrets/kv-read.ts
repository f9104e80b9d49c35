import { ApiError, requestHeaders, serviceUrl, withQuery } from '../api.ts';
import { type KvMount, type KvVersionInfo, kvDataPath } from './kv-mount.ts';

/** A kv v2 data read: the data, or for a deleted or destroyed version its metadata (the API's 404 carries it). */
export interface KvRead {
  data: Record<string, unknown> | null;
  metadata: KvVersionInfo;
}

/**
 * `GET <mount>/data/<path>?version=N`. A deleted or destroyed version answers 404 with its metadata in the body, so
 * the body is read here rather than through `secrets()` (which keeps only the error messages); a 404 without
 * metadata (no such secret or version) and any other refusal throw `ApiError` with the service's messages.
 */
export async function readKvVersion(mount: KvMount, path: string, version?: number): Promise<KvRead> {
  const target = version ? withQuery(kvDataPath(mount, path), { version }) : kvDataPath(mount, path);
  const response = await fetch(serviceUrl('secrets', target), {
    headers: requestHeaders('secrets'),
  });
  const text = await response.text();
  let body:
    | { data?: { data?: Record<string, unknown> | null; metadata?: KvVersionInfo }; errors?: string[] }
    | undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (response.ok && body?.data?.metadata) return { data: body.data.data ?? null, metadata: body.data.metadata };
  if (response.status === 404 && body?.data?.metadata) return { data: null, metadata: body.data.metadata };
  const messages = body?.errors?.length ? body.errors.map(String) : text.trim() && !body ? [text.trim()] : [];
  if (messages.length === 0 && response.status === 404)
    messages.push(`nothing at ${mount.path}${path}${version ? ` version ${version}` : ''}`);
  throw new ApiError(response.status, messages);
}
