/**
 * The `vault` CLI's HTTP calls for `vault kv get -mount=<mount> <path>` and `vault kv list -mount=<mount> [<path>]`,
 * made exactly as the CLI makes them (no registry here has the CLI itself), read from Vault's source:
 * `command/kv_get.go` and `command/kv_list.go` (the `-mount` syntax), `command/kv_helpers.go` (`kvPreflightVersionRequest`,
 * `isKVv2`, `addPrefixToKVPath`, `kvReadRequest`) and `api/` (`Client.NewRequest`, the `X-Vault-Token` and
 * `X-Vault-Request: true` headers, `Logical().List` sending `GET ?list=true`, `Response.Error` refusing any status
 * outside 200–399, `ParseSecret`). Each step records the request it sent, so a test sees the calls as well as what the
 * CLI would print from.
 */
import path from 'node:path/posix';

export interface CliSecret {
  request_id: string;
  lease_id: string;
  lease_duration: number;
  renewable: boolean;
  data: Record<string, unknown> | null;
  warnings: string[] | null;
  mount_type?: string;
}

export interface CliRun {
  /** `METHOD /v1/...?query` of each request, in order. */
  requests: string[];
  /** The secret the command prints, or undefined for "No value found at …". */
  secret: CliSecret | undefined;
  /** The path the command read (what it names in its messages). */
  fullPath: string;
}

export interface CliEnvironment {
  /** VAULT_ADDR */
  addr: string;
  /** VAULT_TOKEN */
  token: string;
}

class CliError extends Error {}

/** `vault kv get -mount=<mount> [-version=N] <path>` */
export async function vaultKvGet(
  environment: CliEnvironment,
  mount: string,
  secretPath: string,
  version?: number,
): Promise<CliRun> {
  const requests: string[] = [];
  // Ignore a leading slash (kv_get.go), then the mount's version from the preflight.
  let partialPath = secretPath.replace(/^\//, '');
  const { mountPath, v2 } = await isKvV2(environment, requests, sanitizePath(mount));
  if (v2) partialPath = goJoin(mountPath, partialPath);
  const params: Record<string, string> = {};
  let fullPath: string;
  if (v2) {
    fullPath = addPrefixToKvPath(partialPath, mountPath, 'data');
    if (version !== undefined && version > 0) params.version = String(version);
  } else {
    fullPath = goJoin(mountPath, partialPath);
  }
  const secret = await kvReadRequest(environment, requests, fullPath, params);
  return { requests, secret, fullPath };
}

/** `vault kv list -mount=<mount> [<path>]` */
export async function vaultKvList(environment: CliEnvironment, mount: string, secretPath = ''): Promise<CliRun> {
  const requests: string[] = [];
  let partialPath = sanitizePath(secretPath);
  const { mountPath, v2 } = await isKvV2(environment, requests, sanitizePath(mount));
  if (v2) partialPath = goJoin(mountPath, partialPath);
  const fullPath = v2 ? addPrefixToKvPath(partialPath, mountPath, 'metadata') : goJoin(mountPath, partialPath);
  // api/logical.go's List: method LIST in the request, sent as GET with list=true "for broader compatibility".
  const response = await send(environment, requests, 'GET', `/v1/${fullPath}`, { list: 'true' });
  if (response.status === 404) return { requests, secret: undefined, fullPath };
  return { requests, secret: checked(response), fullPath };
}

/** Go's `path.Join`: the non-empty elements joined with `/`, then cleaned (no trailing slash, `.` and `..` resolved). */
function goJoin(...elements: string[]): string {
  const joined = elements.filter((element) => element !== '').join('/');
  if (joined === '') return '';
  const cleaned = path.normalize(joined);
  return cleaned.length > 1 ? cleaned.replace(/\/$/, '') : cleaned;
}

/** command/base_helpers.go's sanitizePath: trim spaces, then one leading and one trailing slash. */
function sanitizePath(value: string): string {
  return value.trim().replace(/^\//, '').replace(/\/$/, '');
}

/** kv_helpers.go's kvPreflightVersionRequest and isKVv2: the mount's path and kv version from the UI mounts endpoint. */
async function isKvV2(
  environment: CliEnvironment,
  requests: string[],
  mount: string,
): Promise<{ mountPath: string; v2: boolean }> {
  const response = await send(environment, requests, 'GET', `/v1/sys/internal/ui/mounts/${mount}`);
  // "If we get a 404 we are using an older version of vault, default to version 1".
  if (response.status === 404) return { mountPath: '', v2: false };
  const secret = checked(response);
  if (!secret) throw new CliError('nil response from pre-flight request');
  const data = secret.data ?? {};
  const mountPath = typeof data.path === 'string' ? data.path : '';
  const options = data.options as Record<string, unknown> | null | undefined;
  if (options === null || options === undefined) return { mountPath, v2: false };
  const versionRaw = options.version;
  if (versionRaw === null || versionRaw === undefined) return { mountPath, v2: false };
  // The CLI asserts a string (`versionRaw.(string)`): anything else would panic it.
  if (typeof versionRaw !== 'string') throw new CliError(`options.version is a ${typeof versionRaw}, the CLI panics`);
  return { mountPath, v2: versionRaw === '2' };
}

/** kv_helpers.go's addPrefixToKVPath (without namespaces in the mount path). */
function addPrefixToKvPath(partialPath: string, mountPath: string, apiPrefix: string): string {
  if (partialPath === mountPath || partialPath === mountPath.replace(/\/$/, '')) return goJoin(mountPath, apiPrefix);
  const rest = partialPath.startsWith(mountPath) ? partialPath.slice(mountPath.length) : partialPath;
  return goJoin(mountPath, apiPrefix, rest);
}

/** kv_helpers.go's kvReadRequest: a 404 with data or warnings is still a secret (a deleted version's metadata). */
async function kvReadRequest(
  environment: CliEnvironment,
  requests: string[],
  fullPath: string,
  params: Record<string, string>,
): Promise<CliSecret | undefined> {
  const response = await send(environment, requests, 'GET', `/v1/${fullPath}`, params);
  if (response.status === 404) {
    if (response.text === '') return undefined;
    const secret = JSON.parse(response.text) as CliSecret;
    const hasData = secret.data !== null && Object.keys(secret.data ?? {}).length > 0;
    return (secret.warnings?.length ?? 0) > 0 || hasData ? secret : undefined;
  }
  return checked(response);
}

interface Sent {
  status: number;
  text: string;
}

/** api/client.go and api/request.go: the token and `X-Vault-Request` on every request, the query as Params. */
async function send(
  environment: CliEnvironment,
  requests: string[],
  method: string,
  requestPath: string,
  params: Record<string, string> = {},
): Promise<Sent> {
  const query = new URLSearchParams(params).toString();
  const target = `${requestPath}${query ? `?${query}` : ''}`;
  requests.push(`${method} ${target}`);
  const response = await fetch(new URL(target, environment.addr), {
    method,
    headers: { 'X-Vault-Token': environment.token, 'X-Vault-Request': 'true' },
    redirect: 'manual',
  });
  return { status: response.status, text: await response.text() };
}

/** api/response.go's Error and api/secret.go's ParseSecret: a status outside 200–399 is the command's error. */
function checked(response: Sent): CliSecret | undefined {
  if (response.status < 200 || response.status >= 400) {
    const errors = response.text ? ((JSON.parse(response.text) as { errors?: string[] }).errors ?? []) : [];
    throw new CliError(`Code: ${response.status}. Errors:\n\n${errors.map((error) => `* ${error}`).join('\n')}`);
  }
  return response.text === '' ? undefined : (JSON.parse(response.text) as CliSecret);
}
