import { sign } from 'node:crypto';
import { BodyTooLarge, maxApiAnswerBytes, readBoundedText } from '../../../lib/bounded-body.ts';
import { badRequest, DomainError, upstreamFailure } from '../../../lib/errors.ts';
import type { MountEntry } from '../../mounts/mount-table.ts';
import { googleEndpointVariables } from '../../mounts/operator-settings.ts';

/**
 * The Google REST surfaces the engine calls (IAM, IAM Credentials, Cloud Resource Manager, Cloud Storage,
 * STS, the OAuth2 token endpoint). Their base URLs are operator configuration: the server's environment
 * (`KEYHAVEN_GOOGLE_IAM_URL`, …, which the stage config sets for the deployed cloud functions and tests set for
 * their emulator), else Google's public hosts. A mount's options are never read for them: the root service
 * account's access token goes only where the operator said (issue 23 §3, docs/operator-settings.md).
 */

export interface Endpoints {
  iam: string;
  iamCredentials: string;
  resourceManager: string;
  storage: string;
  sts: string;
  /** The OAuth2 token endpoint; when unset, a credentials file's `token_uri` is used. */
  token?: string;
  /** Base delay of retries on conflicts and IAM propagation (milliseconds). */
  retryBaseMs: number;
}

const endpointSettings = {
  iam: [googleEndpointVariables.iam_endpoint, 'https://iam.googleapis.com'],
  iamCredentials: [googleEndpointVariables.iamcredentials_endpoint, 'https://iamcredentials.googleapis.com'],
  resourceManager: [googleEndpointVariables.resourcemanager_endpoint, 'https://cloudresourcemanager.googleapis.com'],
  storage: [googleEndpointVariables.storage_endpoint, 'https://storage.googleapis.com'],
  sts: [googleEndpointVariables.sts_endpoint, 'https://sts.googleapis.com'],
} as const;

export const defaultTokenUrl = 'https://oauth2.googleapis.com/token';
export const cloudPlatformScope = 'https://www.googleapis.com/auth/cloud-platform';

/** The endpoints as the operator configured them; only `retry_base_ms` (a delay, no destination) comes from the mount. */
export function endpointsOf(mount: MountEntry, env: NodeJS.ProcessEnv = process.env): Endpoints {
  const pick = ([variable, fallback]: readonly [string, string]) => (env[variable] || fallback).replace(/\/+$/, '');
  const token = env[googleEndpointVariables.token_endpoint];
  const retry = Number(mount.options.retry_base_ms || env.KEYHAVEN_GOOGLE_RETRY_MS || 500);
  return {
    iam: pick(endpointSettings.iam),
    iamCredentials: pick(endpointSettings.iamCredentials),
    resourceManager: pick(endpointSettings.resourceManager),
    storage: pick(endpointSettings.storage),
    sts: pick(endpointSettings.sts),
    ...(token ? { token } : {}),
    retryBaseMs: Number.isFinite(retry) && retry >= 0 ? retry : 500,
  };
}

/** An error answer of a Google API: `status` is Google's canonical code name (`NOT_FOUND`, `ABORTED`, …). */
export class GoogleApiError extends Error {
  constructor(
    readonly httpStatus: number,
    readonly status: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * How a cloud failure reaches the caller: Google's 400, 403 and 404 are about the request (an invalid request, the
 * caller's to fix); the rest, and anything that is not Google's answer, an upstream failure.
 */
export function asDomainError(error: unknown, doing: string): DomainError {
  if (error instanceof DomainError) return error;
  if (error instanceof GoogleApiError) {
    const callers = error.httpStatus === 400 || error.httpStatus === 404 || error.httpStatus === 403;
    return (callers ? badRequest : upstreamFailure)(`${doing}: ${error.message}`);
  }
  return upstreamFailure(`${doing}: ${error instanceof Error ? error.message : String(error)}`);
}

export const isNotFound = (error: unknown) => error instanceof GoogleApiError && error.httpStatus === 404;

/** The parsed service-account credentials file. */
export interface CredentialsFile {
  type: 'service_account';
  project_id?: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  client_id?: string;
  token_uri?: string;
}

export interface MintedToken {
  token: string;
  /** Lifetime the server granted, in seconds from now. */
  expiresIn: number;
}

/**
 * The JWT-bearer grant's assertion, as google-auth-library's signer (gtoken) builds it: header `{"alg":"RS256"}`,
 * claims iss, scope (space-separated), aud Google's token URL (whatever endpoint it is sent to), exp an hour after
 * iat; signed RSA-SHA256 with the file's key.
 */
function jwtBearerAssertion(credentials: CredentialsFile, scopes: string[]): string {
  const iat = Math.floor(Date.now() / 1000);
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const signingInput = `${part({ alg: 'RS256' })}.${part({ iss: credentials.client_email, scope: scopes.join(' '), aud: defaultTokenUrl, exp: iat + 3600, iat })}`;
  return `${signingInput}.${sign('sha256', Buffer.from(signingInput), credentials.private_key).toString('base64url')}`;
}

/**
 * Mints an OAuth2 access token with the JWT-bearer grant, posted to the configured token endpoint (else the file's
 * `token_uri`, else Google's).
 */
export async function tokenFromCredentials(
  credentials: CredentialsFile,
  scopes: string[],
  endpoints: Endpoints,
): Promise<MintedToken> {
  return postTokenForm(endpoints.token ?? credentials.token_uri ?? defaultTokenUrl, {
    grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
    assertion: jwtBearerAssertion(credentials, scopes),
  });
}

/**
 * Posts an OAuth2 grant to a token endpoint for an access token. A refusal is the endpoint's status with its OAuth
 * error; anything else a 502.
 */
export async function postTokenForm(tokenUrl: string, form: Record<string, string>): Promise<MintedToken> {
  try {
    const response = await fetch(tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
    const text = await readBoundedText(response, maxApiAnswerBytes, 'the token endpoint');
    let data: Record<string, unknown>;
    try {
      data = JSON.parse(text) as Record<string, unknown>;
    } catch {
      data = { error: 'invalid_response', error_description: text.slice(0, 200) };
    }
    if (!response.ok)
      throw new GoogleApiError(
        response.status,
        String(data.error ?? 'UNKNOWN'),
        `${data.error}: ${data.error_description ?? ''}`,
      );
    if (typeof data.access_token !== 'string' || !data.access_token)
      throw new GoogleApiError(502, 'INTERNAL', 'the token endpoint returned no access token');
    const expiresIn = typeof data.expires_in === 'number' ? Math.floor(data.expires_in) : 3600;
    return { token: data.access_token, expiresIn };
  } catch (error) {
    if (error instanceof GoogleApiError) throw error;
    throw new GoogleApiError(
      502,
      'UNAVAILABLE',
      `token endpoint: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** REST calls with a bearer token; Google's error envelope becomes a GoogleApiError. */
export class GoogleClient {
  constructor(
    readonly endpoints: Endpoints,
    private readonly bearer: () => Promise<string>,
  ) {}

  async call<T = Record<string, unknown>>(method: string, url: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${await this.bearer()}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      if (error instanceof GoogleApiError || error instanceof DomainError) throw error;
      throw new GoogleApiError(503, 'UNAVAILABLE', `${method} ${new URL(url).pathname}: ${(error as Error).message}`);
    }
    let text: string;
    try {
      text = await readBoundedText(response, maxApiAnswerBytes, `${method} ${new URL(url).pathname}`);
    } catch (error) {
      if (!(error instanceof BodyTooLarge)) throw error;
      throw new GoogleApiError(502, 'UNAVAILABLE', error.message);
    }
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = { error: { message: text.slice(0, 200) } };
    }
    if (!response.ok) {
      const error = (parsed as { error?: { message?: string; status?: string } }).error ?? {};
      throw new GoogleApiError(
        response.status,
        error.status ?? String(response.status),
        error.message ?? `HTTP ${response.status}`,
      );
    }
    return parsed as T;
  }

  private account(email: string, project = '-') {
    return `${this.endpoints.iam}/v1/projects/${project}/serviceAccounts/${encodeURIComponent(email)}`;
  }

  createServiceAccount(project: string, accountId: string, displayName: string, description: string) {
    return this.call<{ email: string; projectId: string; uniqueId: string }>(
      'POST',
      `${this.endpoints.iam}/v1/projects/${project}/serviceAccounts`,
      {
        accountId,
        serviceAccount: { displayName, description },
      },
    );
  }

  getServiceAccount(email: string) {
    return this.call<{ email: string; projectId: string; uniqueId: string }>('GET', this.account(email));
  }

  async deleteServiceAccount(email: string): Promise<void> {
    try {
      await this.call('DELETE', this.account(email));
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  createKey(email: string, keyAlgorithm: string, privateKeyType: string) {
    return this.call<{ name: string; privateKeyData: string; keyAlgorithm: string; privateKeyType: string }>(
      'POST',
      `${this.account(email)}/keys`,
      {
        keyAlgorithm,
        privateKeyType,
      },
    );
  }

  async listKeys(email: string): Promise<Array<{ name: string; validAfterTime?: string }>> {
    const reply = await this.call<{ keys?: Array<{ name: string; validAfterTime?: string }> }>(
      'GET',
      `${this.account(email)}/keys?keyTypes=USER_MANAGED`,
    );
    return reply.keys ?? [];
  }

  /** Deletes a key by its full name; a key (or account) already gone counts as deleted. */
  async deleteKey(keyName: string): Promise<void> {
    try {
      await this.call('DELETE', `${this.endpoints.iam}/v1/${keyName.split('/').map(encodeURIComponent).join('/')}`);
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  generateAccessToken(email: string, scopes: string[], lifetimeSeconds: number) {
    return this.call<{ accessToken: string; expireTime: string }>(
      'POST',
      `${this.endpoints.iamCredentials}/v1/projects/-/serviceAccounts/${encodeURIComponent(email)}:generateAccessToken`,
      { scope: scopes, lifetime: `${lifetimeSeconds}s` },
    );
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
