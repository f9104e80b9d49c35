/**
 * An in-process emulator of the Google Cloud APIs a credentials engine uses, following Google's published
 * REST reference field by field. One loopback listener; each API lives under its own prefix, so a client is
 * pointed at it by base URL (`endpoints`):
 *
 * - IAM v1 (`/iam`): `projects.serviceAccounts.create|get|delete|getIamPolicy|setIamPolicy` and
 *   `projects.serviceAccounts.keys.create|get|list|delete`. `accountId` must match
 *   `[a-z]([-a-z0-9]*[a-z0-9])` and be 6–30 characters; the email is `<accountId>@<project>.iam.gserviceaccount.com`;
 *   `-` stands for any project. Keys hold real RSA key material: `privateKeyData` is the base64 of the JSON
 *   credentials file (`TYPE_GOOGLE_CREDENTIALS_FILE`, the default); at most 10 user-managed keys per account.
 *   Deleting an account deletes its keys, and its members in other policies become
 *   `deleted:serviceAccount:<email>?uid=<uniqueId>` as Google shows them.
 * - Cloud Resource Manager (`/cloudresourcemanager`): `v1/projects/{id}:getIamPolicy|setIamPolicy`,
 *   `v1/organizations/{id}:…`, `v2/folders/{id}:…`.
 * - Cloud Storage JSON API (`/storage`): `GET|PUT storage/v1/b/{bucket}/iam`.
 * - IAM Credentials (`/iamcredentials`): `v1/projects/-/serviceAccounts/{email}:generateAccessToken`
 *   (`scope` required, `lifetime` up to 3600 s, or 43200 s when the lifetime-extension org policy is on).
 * - OAuth2 (`/oauth2/token`): the `urn:ietf:params:oauth:grant-type:jwt-bearer` grant; the assertion's
 *   RS256 signature is verified with the public half of the issuing account's key (by `kid`, else any of
 *   its keys), `aud` must be Google's token URL, the lifetime at most one hour. And the `refresh_token` grant of a
 *   user seeded with `seedAuthorizedUser` (its client id and secret must match: 401 `invalid_client`; an unknown
 *   refresh token is 400 `invalid_grant`).
 * - STS (`/sts/v1/token`): the token-exchange grant for a workload identity pool provider registered
 *   with `addWorkloadIdentityProvider` (issuer, allowed audiences, public key).
 *
 * Policies carry etags: `setIamPolicy` with a stale etag is 409 `ABORTED` (storage: 412). A member
 * `serviceAccount:<email>` must name an existing account (400 otherwise); `eventualConsistency` makes a new
 * account invisible to policies for its first N attempts, as IAM's propagation delay does.
 *
 * Every API call needs a bearer token the emulator issued and that has not expired; callers are
 * authenticated, IAM permissions are not evaluated. Errors are Google's envelope
 * `{"error":{"code","message","status"}}` (OAuth2 and STS: `{"error","error_description"}`).
 *
 * Failure injection: `failNext(operation, { status, times, afterApply })` answers the next calls of a
 * method (named as in the reference, e.g. `serviceAccounts.create`, `projects.setIamPolicy`) with an error,
 * before or after applying the change (an answer lost on the way back).
 *
 * The endpoints are a route table over per-resource files in google/ (service-accounts.ts, iam-policies.ts,
 * credentials.ts, and tokens.ts for OAuth2 and STS) that share the state in google/state.ts.
 */
import { createPrivateKey, createPublicKey, type KeyObject, randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JWK } from 'jose';
import { credentialRoutes } from './google/credentials.ts';
import { iamPolicyRoutes } from './google/iam-policies.ts';
import { GoogleError, OAuthError } from './google/model.ts';
import { serviceAccountRoutes } from './google/service-accounts.ts';
import { createGoogleState } from './google/state.ts';
import { tokenEndpoints } from './google/tokens.ts';

export const googleTokenAudience = 'https://oauth2.googleapis.com/token';

export interface ServiceAccount {
  name: string;
  projectId: string;
  uniqueId: string;
  email: string;
  displayName: string;
  description: string;
  etag: string;
  oauth2ClientId: string;
}

export interface ServiceAccountKey {
  name: string;
  id: string;
  email: string;
  privateKeyType: string;
  keyAlgorithm: string;
  publicKey: KeyObject;
  validAfterTime: string;
  validBeforeTime: string;
}

export interface Binding {
  role: string;
  members: string[];
}

export interface Policy {
  version: number;
  etag: string;
  bindings: Binding[];
}

export interface IssuedToken {
  token: string;
  /** The account email, or the federated principal for STS tokens. */
  principal: string;
  scopes: string[];
  expiresAt: number;
  /** The key that signed the assertion (OAuth2 grant), if any. */
  keyId?: string;
  via: 'oauth2' | 'generateAccessToken' | 'sts';
}

export interface FailureOptions {
  status?: number;
  message?: string;
  /** How many calls fail (default 1). */
  times?: number;
  /** Apply the change, then answer with the error (the reply was lost). */
  afterApply?: boolean;
}

export interface WorkloadIdentityProvider {
  /** `//iam.googleapis.com/projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>` */
  audience: string;
  issuer: string;
  /** Allowed `aud` values of subject tokens; default `https://iam.googleapis.com/` + the provider's resource name. */
  allowedAudiences?: string[];
  publicJwk: JWK;
}

export interface GoogleEmulatorOptions {
  /** Attempts during which a new service account is not yet known to policies (default 0). */
  eventualConsistency?: number;
  /** The `constraints/iam.allowServiceAccountCredentialLifetimeExtension` org policy (default true). */
  lifetimeExtension?: boolean;
  /** Milliseconds since the epoch; default the real time. */
  now?: () => number;
}

export interface GoogleEmulator {
  readonly url: string;
  /** Base URLs per API, as a client is configured with them. */
  readonly endpoints: {
    iam: string;
    iamCredentials: string;
    resourceManager: string;
    storage: string;
    oauth2Token: string;
    sts: string;
  };
  addProject(projectId: string): void;
  addBucket(name: string): void;
  /** Creates an account with one key out of band (a root credential); returns the key's credentials file. */
  seedServiceAccount(project: string, accountId: string): { email: string; credentials: string };
  /** Signs a user in as `gcloud auth application-default login` does; returns the `authorized_user` file it writes. */
  seedAuthorizedUser(email: string): string;
  serviceAccounts(): ServiceAccount[];
  serviceAccount(email: string): ServiceAccount | undefined;
  keys(email?: string): ServiceAccountKey[];
  /** The policy of a resource (`projects/p`, `projects/p/serviceAccounts/e`, `b/bucket`, …). */
  policy(resource: string): Policy;
  /** Members bound anywhere to `member`, as `resource role` strings. */
  bindingsOf(member: string): string[];
  /** Changes a policy out of band (bumps the etag). */
  setPolicy(resource: string, bindings: Binding[]): void;
  tokenInfo(token: string): IssuedToken | undefined;
  issuedTokens(): IssuedToken[];
  addWorkloadIdentityProvider(provider: WorkloadIdentityProvider): void;
  failNext(operation: string, options?: FailureOptions): void;
  clearFailures(): void;
  /** Operation names of every call received, in order. */
  readonly calls: string[];
  close(): Promise<void>;
}

export async function startGoogleEmulator(options: GoogleEmulatorOptions = {}): Promise<GoogleEmulator> {
  const s = createGoogleState(options);
  const {
    projects,
    buckets,
    accounts,
    keys,
    policies,
    tokens,
    providers,
    failures,
    calls,
    newEtag,
    policyOf,
    copyPolicy,
    createAccount,
    createKey,
    failure,
  } = s;
  const { oauthToken, stsToken } = tokenEndpoints(s);
  // The route table, in the order it is matched.
  const routes = [...serviceAccountRoutes(s), ...iamPolicyRoutes(s), ...credentialRoutes(s)];

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString();
    const parsed = new URL(request.url ?? '/', 'http://localhost');
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
      response.end(JSON.stringify(body));
    };
    const isForm = (request.headers['content-type'] ?? '').includes('application/x-www-form-urlencoded');
    if (request.method === 'POST' && (parsed.pathname === '/oauth2/token' || parsed.pathname === '/sts/v1/token')) {
      const operation = parsed.pathname === '/oauth2/token' ? 'oauth2.token' : 'sts.token';
      calls.push(operation);
      try {
        const planned = failure(operation);
        if (planned && !planned.afterApply)
          throw new OAuthError(planned.status ?? 500, 'internal_failure', planned.message ?? 'injected failure');
        const result =
          operation === 'oauth2.token'
            ? await oauthToken(new URLSearchParams(raw))
            : await stsToken(
                isForm
                  ? Object.fromEntries(new URLSearchParams(raw))
                  : (JSON.parse(raw || '{}') as Record<string, string>),
              );
        if (planned)
          throw new OAuthError(planned.status ?? 500, 'internal_failure', planned.message ?? 'injected failure');
        send(200, result);
      } catch (error) {
        if (error instanceof OAuthError) send(error.code, { error: error.error, error_description: error.description });
        else send(400, { error: 'invalid_request', error_description: (error as Error).message });
      }
      return;
    }
    const route = routes.find(
      (candidate) => candidate.method === request.method && candidate.pattern.test(parsed.pathname),
    );
    if (!route) {
      send(404, {
        error: {
          code: 404,
          message: `The requested URL ${parsed.pathname} was not found on this server.`,
          status: 'NOT_FOUND',
        },
      });
      return;
    }
    calls.push(route.operation);
    try {
      let body: unknown;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        throw new GoogleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.');
      }
      const planned = failure(route.operation);
      const injected = () =>
        new GoogleError(
          planned?.status ?? 503,
          planned?.status === 409 ? 'ABORTED' : 'UNAVAILABLE',
          planned?.message ?? 'The service is currently unavailable.',
        );
      if (planned && !planned.afterApply) throw injected();
      const result = route.handle(route.pattern.exec(parsed.pathname) ?? [], body, request, parsed.searchParams);
      if (planned) throw injected();
      send(200, result);
    } catch (error) {
      if (error instanceof GoogleError)
        send(error.code, { error: { code: error.code, message: error.message, status: error.status } });
      else send(500, { error: { code: 500, message: String(error), status: 'INTERNAL' } });
    }
  }

  const server = http.createServer((request, response) => {
    handle(request, response).catch((error) => {
      response.writeHead(500);
      response.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  s.url = url;

  return {
    url,
    endpoints: {
      iam: `${url}/iam`,
      iamCredentials: `${url}/iamcredentials`,
      resourceManager: `${url}/cloudresourcemanager`,
      storage: `${url}/storage`,
      oauth2Token: `${url}/oauth2/token`,
      sts: `${url}/sts`,
    },
    addProject: (projectId) => void projects.add(projectId),
    addBucket: (name) => void buckets.add(name),
    seedServiceAccount(project, accountId) {
      projects.add(project);
      const account =
        accounts.get(`${accountId}@${project}.iam.gserviceaccount.com`)?.account ?? createAccount(project, accountId);
      const state = accounts.get(account.email);
      if (state) state.invisibleFor = 0;
      return {
        email: account.email,
        credentials: createKey(account, 'TYPE_GOOGLE_CREDENTIALS_FILE', 'KEY_ALG_RSA_2048').credentials,
      };
    },
    seedAuthorizedUser(email) {
      const user = {
        email,
        clientId: `${randomBytes(6).toString('hex')}.apps.googleusercontent.com`,
        clientSecret: randomBytes(12).toString('base64url'),
      };
      const refreshToken = `1//${randomBytes(32).toString('base64url')}`;
      s.authorizedUsers.set(refreshToken, user);
      return JSON.stringify({
        account: '',
        client_id: user.clientId,
        client_secret: user.clientSecret,
        refresh_token: refreshToken,
        type: 'authorized_user',
        universe_domain: 'googleapis.com',
      });
    },
    serviceAccounts: () => [...accounts.values()].map((state) => state.account),
    serviceAccount: (email) => accounts.get(email)?.account,
    keys: (email) => [...keys.values()].filter((key) => email === undefined || key.email === email),
    policy: (resource) => copyPolicy(policyOf(resource)),
    bindingsOf(member) {
      const found: string[] = [];
      for (const [resource, policy] of policies) {
        for (const binding of policy.bindings)
          if (binding.members.includes(member)) found.push(`${resource} ${binding.role}`);
      }
      return found.sort();
    },
    setPolicy(resource, bindings) {
      policies.set(resource, {
        version: 1,
        etag: newEtag(),
        bindings: bindings.map((binding) => ({ role: binding.role, members: [...binding.members] })),
      });
    },
    tokenInfo: (token) => tokens.get(token),
    issuedTokens: () => [...tokens.values()],
    addWorkloadIdentityProvider: (provider) => void providers.set(provider.audience, provider),
    failNext(operation, failureOptions = {}) {
      failures.set(operation, {
        status: failureOptions.status ?? 503,
        times: failureOptions.times ?? 1,
        afterApply: failureOptions.afterApply ?? false,
        ...(failureOptions.message ? { message: failureOptions.message } : {}),
      });
    },
    clearFailures: () => failures.clear(),
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Opens a credentials file's private key (for tests that sign their own assertions). */
export const privateKeyOf = (credentials: string): KeyObject =>
  createPrivateKey((JSON.parse(credentials) as { private_key: string }).private_key);
export const publicKeyOf = (credentials: string): KeyObject => createPublicKey(privateKeyOf(credentials));
