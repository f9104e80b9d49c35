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
 *   its keys), `aud` must be Google's token URL, the lifetime at most one hour.
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
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, randomBytes, randomInt } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeProtectedHeader, importJWK, type JWK, jwtVerify } from 'jose';

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
  readonly endpoints: { iam: string; iamCredentials: string; resourceManager: string; storage: string; oauth2Token: string; sts: string };
  addProject(projectId: string): void;
  addBucket(name: string): void;
  /** Creates an account with one key out of band (a root credential); returns the key's credentials file. */
  seedServiceAccount(project: string, accountId: string): { email: string; credentials: string };
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

class GoogleError extends Error {
  constructor(
    readonly code: number,
    readonly status: string,
    message: string,
  ) {
    super(message);
  }
}

class OAuthError extends Error {
  constructor(
    readonly code: number,
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}

const accountIdPattern = /^[a-z]([-a-z0-9]*[a-z0-9])$/;
const cloudPlatformScope = 'https://www.googleapis.com/auth/cloud-platform';
const memberPattern = /^(allUsers|allAuthenticatedUsers|(user|serviceAccount|group|domain|principal|principalSet|deleted:serviceAccount|deleted:user|deleted:group):.+)$/;
const rolePattern = /^(roles\/[A-Za-z0-9_.]+|projects\/[^/]+\/roles\/[A-Za-z0-9_.]+|organizations\/[0-9]+\/roles\/[A-Za-z0-9_.]+)$/;

interface AccountState {
  account: ServiceAccount;
  invisibleFor: number;
}

export async function startGoogleEmulator(options: GoogleEmulatorOptions = {}): Promise<GoogleEmulator> {
  const now = options.now ?? Date.now;
  const projects = new Set<string>();
  const buckets = new Set<string>();
  const accounts = new Map<string, AccountState>();
  const keys = new Map<string, ServiceAccountKey>();
  const policies = new Map<string, Policy>();
  const tokens = new Map<string, IssuedToken>();
  const providers = new Map<string, WorkloadIdentityProvider>();
  const failures = new Map<string, Required<Omit<FailureOptions, 'message'>> & { message?: string }>();
  const calls: string[] = [];
  let url = '';

  const newEtag = () => randomBytes(8).toString('base64');
  const policyOf = (resource: string): Policy => {
    let policy = policies.get(resource);
    if (!policy) {
      policy = { version: 1, etag: 'ACAB', bindings: [] };
      policies.set(resource, policy);
    }
    return policy;
  };
  const copyPolicy = (policy: Policy): Policy => ({
    version: policy.version,
    etag: policy.etag,
    bindings: policy.bindings.map((binding) => ({ role: binding.role, members: [...binding.members] })),
  });
  const findAccount = (project: string, id: string): AccountState | undefined => {
    const byEmail = accounts.get(id);
    const found = byEmail ?? [...accounts.values()].find((state) => state.account.uniqueId === id);
    if (!found) return undefined;
    if (project !== '-' && found.account.projectId !== project) return undefined;
    return found;
  };
  const accountNotFound = (project: string, id: string) =>
    new GoogleError(404, 'NOT_FOUND', `Service account projects/${project}/serviceAccounts/${id} does not exist.`);

  function createAccount(project: string, accountId: string, displayName = '', description = ''): ServiceAccount {
    const email = `${accountId}@${project}.iam.gserviceaccount.com`;
    if (accounts.has(email)) throw new GoogleError(409, 'ALREADY_EXISTS', `Service account ${accountId} already exists within project projects/${project}.`);
    const uniqueId = `1${Array.from({ length: 20 }, () => randomInt(10)).join('')}`;
    const account: ServiceAccount = {
      name: `projects/${project}/serviceAccounts/${email}`,
      projectId: project,
      uniqueId,
      email,
      displayName,
      description,
      etag: 'MDEwMjE5MjA=',
      oauth2ClientId: uniqueId,
    };
    accounts.set(email, { account, invisibleFor: options.eventualConsistency ?? 0 });
    return account;
  }

  function createKey(account: ServiceAccount, privateKeyType: string, keyAlgorithm: string) {
    const bits = keyAlgorithm === 'KEY_ALG_RSA_1024' ? 1024 : 2048;
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
    const id = randomBytes(20).toString('hex');
    const key: ServiceAccountKey = {
      name: `projects/${account.projectId}/serviceAccounts/${account.email}/keys/${id}`,
      id,
      email: account.email,
      privateKeyType,
      keyAlgorithm,
      publicKey,
      validAfterTime: new Date(now()).toISOString().replace(/\.\d+Z$/, 'Z'),
      validBeforeTime: '9999-12-31T23:59:59Z',
    };
    keys.set(id, key);
    const credentials = {
      type: 'service_account',
      project_id: account.projectId,
      private_key_id: id,
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: account.email,
      client_id: account.uniqueId,
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: `${url}/oauth2/token`,
      auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
      client_x509_cert_url: `https://www.googleapis.com/robot/v1/metadata/x509/${encodeURIComponent(account.email)}`,
      universe_domain: 'googleapis.com',
    };
    return { key, credentials: JSON.stringify(credentials, null, 2) };
  }

  const keyView = (key: ServiceAccountKey) => ({
    name: key.name,
    validAfterTime: key.validAfterTime,
    validBeforeTime: key.validBeforeTime,
    keyAlgorithm: key.keyAlgorithm,
    keyOrigin: 'GOOGLE_PROVIDED',
    keyType: 'USER_MANAGED',
  });

  function deleteAccount(state: AccountState): void {
    const { email, uniqueId } = state.account;
    accounts.delete(email);
    for (const [id, key] of keys) if (key.email === email) keys.delete(id);
    policies.delete(`projects/${state.account.projectId}/serviceAccounts/${email}`);
    for (const policy of policies.values()) {
      for (const binding of policy.bindings) {
        binding.members = binding.members.map((member) =>
          member === `serviceAccount:${email}` ? `deleted:serviceAccount:${email}?uid=${uniqueId}` : member,
        );
      }
    }
  }

  function checkPolicy(body: unknown): Policy & { etagGiven?: string } {
    const policy = (body as { policy?: unknown })?.policy as Partial<Policy> | undefined;
    if (!policy || typeof policy !== 'object') throw new GoogleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received. Missing "policy".');
    const bindings = policy.bindings ?? [];
    if (!Array.isArray(bindings)) throw new GoogleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received. "policy.bindings" must be a list.');
    for (const binding of bindings) {
      if (typeof binding?.role !== 'string' || !rolePattern.test(binding.role)) {
        throw new GoogleError(400, 'INVALID_ARGUMENT', `Role (${binding?.role}) does not exist in the resource's hierarchy.`);
      }
      for (const member of binding.members ?? []) {
        if (!memberPattern.test(member)) throw new GoogleError(400, 'INVALID_ARGUMENT', `Invalid member: ${member}.`);
        if (member.startsWith('serviceAccount:')) {
          const state = accounts.get(member.slice('serviceAccount:'.length));
          if (!state || state.invisibleFor > 0) {
            if (state) state.invisibleFor--;
            throw new GoogleError(400, 'INVALID_ARGUMENT', `Service account ${member.slice('serviceAccount:'.length)} does not exist.`);
          }
        }
      }
    }
    return {
      version: policy.version ?? 1,
      etag: '',
      etagGiven: policy.etag,
      bindings: bindings
        .map((binding) => ({ role: binding.role, members: [...new Set(binding.members ?? [])] }))
        .filter((binding) => binding.members.length > 0),
    };
  }

  function setPolicy(resource: string, body: unknown, conflictStatus: number): Policy {
    const current = policyOf(resource);
    const next = checkPolicy(body);
    if (next.etagGiven && next.etagGiven !== current.etag) {
      throw conflictStatus === 412
        ? new GoogleError(412, 'FAILED_PRECONDITION', 'Precondition Failed')
        : new GoogleError(409, 'ABORTED', 'There were concurrent policy changes. Please retry the whole read-modify-write with exponential backoff.');
    }
    const stored: Policy = { version: next.version, etag: newEtag(), bindings: next.bindings };
    policies.set(resource, stored);
    return copyPolicy(stored);
  }

  function authenticate(request: IncomingMessage): IssuedToken {
    const header = request.headers.authorization ?? '';
    const token = tokens.get(header.replace(/^Bearer\s+/i, ''));
    if (!header || !token || token.expiresAt <= now()) {
      throw new GoogleError(
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      );
    }
    if (!token.scopes.includes(cloudPlatformScope) && !token.scopes.some((scope) => scope.startsWith('https://www.googleapis.com/auth/iam'))) {
      throw new GoogleError(403, 'PERMISSION_DENIED', 'Request had insufficient authentication scopes.');
    }
    return token;
  }

  function issue(principal: string, scopes: string[], lifetimeSeconds: number, via: IssuedToken['via'], keyId?: string): IssuedToken {
    const issued: IssuedToken = {
      token: `ya29.${randomBytes(48).toString('base64url')}`,
      principal,
      scopes,
      expiresAt: now() + lifetimeSeconds * 1000,
      via,
      ...(keyId ? { keyId } : {}),
    };
    tokens.set(issued.token, issued);
    return issued;
  }

  function failure(operation: string): (FailureOptions & { afterApply: boolean }) | undefined {
    const planned = failures.get(operation);
    if (!planned) return undefined;
    planned.times--;
    if (planned.times <= 0) failures.delete(operation);
    return planned;
  }

  async function oauthToken(form: URLSearchParams): Promise<unknown> {
    const grantType = form.get('grant_type');
    if (grantType !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      throw new OAuthError(400, 'unsupported_grant_type', `Invalid grant_type: ${grantType ?? ''}`);
    }
    const assertion = form.get('assertion') ?? '';
    let header: { kid?: string; alg?: string };
    let claims: Record<string, unknown>;
    try {
      header = decodeProtectedHeader(assertion);
      claims = JSON.parse(Buffer.from(assertion.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
    } catch {
      throw new OAuthError(400, 'invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.');
    }
    if (header.alg !== 'RS256') throw new OAuthError(400, 'invalid_grant', 'Invalid JWT Signature.');
    const email = String(claims.iss ?? '');
    const state = accounts.get(email);
    if (!state) throw new OAuthError(400, 'invalid_grant', 'Invalid grant: account not found');
    const candidates = [...keys.values()].filter((key) => key.email === email && (!header.kid || key.id === header.kid));
    let signer: ServiceAccountKey | undefined;
    for (const key of candidates) {
      try {
        await jwtVerify(assertion, key.publicKey, { algorithms: ['RS256'], currentDate: new Date(now()), clockTolerance: 60 });
        signer = key;
        break;
      } catch (error) {
        if ((error as { code?: string }).code === 'ERR_JWT_EXPIRED') {
          throw new OAuthError(400, 'invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.');
        }
      }
    }
    if (!signer) throw new OAuthError(400, 'invalid_grant', 'Invalid JWT Signature.');
    if (claims.aud !== googleTokenAudience && claims.aud !== `${url}/oauth2/token`) {
      throw new OAuthError(400, 'invalid_grant', 'Invalid JWT: Failed audience check.');
    }
    const iat = Number(claims.iat);
    const exp = Number(claims.exp);
    if (!Number.isFinite(iat) || !Number.isFinite(exp) || exp - iat > 3600 || iat * 1000 > now() + 60_000) {
      throw new OAuthError(400, 'invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.');
    }
    const scope = typeof claims.scope === 'string' ? claims.scope.split(/\s+/).filter(Boolean) : [];
    if (scope.length === 0) throw new OAuthError(400, 'invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
    const issued = issue(email, scope, 3599, 'oauth2', signer.id);
    return { access_token: issued.token, expires_in: 3599, token_type: 'Bearer' };
  }

  async function stsToken(params: Record<string, string>): Promise<unknown> {
    if (params.grant_type !== 'urn:ietf:params:oauth:grant-type:token-exchange') {
      throw new OAuthError(400, 'unsupported_grant_type', `Invalid value for "grant_type": ${params.grant_type ?? ''}`);
    }
    if (params.requested_token_type !== 'urn:ietf:params:oauth:token-type:access_token') {
      throw new OAuthError(400, 'invalid_request', 'Invalid value for "requested_token_type".');
    }
    if (!['urn:ietf:params:oauth:token-type:jwt', 'urn:ietf:params:oauth:token-type:id_token'].includes(params.subject_token_type ?? '')) {
      throw new OAuthError(400, 'invalid_request', 'Invalid value for "subject_token_type".');
    }
    const provider = providers.get(params.audience ?? '');
    if (!provider) throw new OAuthError(400, 'invalid_target', 'The target service indicated by the "audience" parameters is invalid.');
    const allowed = provider.allowedAudiences ?? [`https://iam.googleapis.com/${provider.audience.replace(/^\/\/iam\.googleapis\.com\//, '')}`];
    let subject: string;
    try {
      const { payload } = await jwtVerify(params.subject_token ?? '', await importJWK(provider.publicJwk, provider.publicJwk.alg ?? 'RS256'), {
        issuer: provider.issuer,
        audience: allowed,
        currentDate: new Date(now()),
      });
      subject = String(payload.sub ?? '');
    } catch (error) {
      throw new OAuthError(400, 'invalid_grant', `The given subject token is invalid: ${(error as Error).message}`);
    }
    const pool = provider.audience.replace(/^\/\/iam\.googleapis\.com\//, '').replace(/\/providers\/[^/]+$/, '');
    const scopes = (params.scope ?? cloudPlatformScope).split(/\s+/).filter(Boolean);
    const issued = issue(`principal://iam.googleapis.com/${pool}/subject/${subject}`, scopes, 3600, 'sts');
    return { access_token: issued.token, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: 3600 };
  }

  type Route = { method: string; pattern: RegExp; operation: string; handle: (match: string[], body: unknown, request: IncomingMessage, query: URLSearchParams) => unknown };
  const policyRoute = (prefix: RegExp, operation: string, resourceOf: (match: string[]) => string, exists: (match: string[]) => void): Route[] => [
    {
      method: 'POST',
      pattern: new RegExp(`${prefix.source}:getIamPolicy$`),
      operation: `${operation}.getIamPolicy`,
      handle: (match, _body, request) => {
        authenticate(request);
        exists(match);
        return copyPolicy(policyOf(resourceOf(match)));
      },
    },
    {
      method: 'POST',
      pattern: new RegExp(`${prefix.source}:setIamPolicy$`),
      operation: `${operation}.setIamPolicy`,
      handle: (match, body, request) => {
        authenticate(request);
        exists(match);
        return setPolicy(resourceOf(match), body, 409);
      },
    },
  ];
  const projectExists = (project: string) => {
    if (!projects.has(project)) throw new GoogleError(403, 'PERMISSION_DENIED', `The caller does not have permission`);
  };
  const accountMust = (match: string[]) => {
    if (!findAccount(match[1] ?? '', decodeURIComponent(match[2] ?? ''))) throw accountNotFound(match[1] ?? '', decodeURIComponent(match[2] ?? ''));
  };
  const accountResource = (match: string[]) => {
    const state = findAccount(match[1] ?? '', decodeURIComponent(match[2] ?? '')) as AccountState;
    return `projects/${state.account.projectId}/serviceAccounts/${state.account.email}`;
  };

  const routes: Route[] = [
    {
      method: 'POST',
      pattern: /^\/iam\/v1\/projects\/([^/:]+)\/serviceAccounts$/,
      operation: 'serviceAccounts.create',
      handle: ([, project = ''], body, request) => {
        authenticate(request);
        const { accountId, serviceAccount } = (body ?? {}) as { accountId?: string; serviceAccount?: { displayName?: string; description?: string } };
        if (!accountId || accountId.length < 6 || accountId.length > 30 || !accountIdPattern.test(accountId)) {
          throw new GoogleError(400, 'INVALID_ARGUMENT', 'Account name must be 6-30 characters long and match the regular expression [a-z]([-a-z0-9]*[a-z0-9]).');
        }
        if ((serviceAccount?.displayName ?? '').length > 100) throw new GoogleError(400, 'INVALID_ARGUMENT', 'Display name must be at most 100 characters.');
        if ((serviceAccount?.description ?? '').length > 256) throw new GoogleError(400, 'INVALID_ARGUMENT', 'Description must be at most 256 characters.');
        if (!projects.has(project)) throw new GoogleError(404, 'NOT_FOUND', `Project ${project} not found`);
        return createAccount(project, accountId, serviceAccount?.displayName, serviceAccount?.description);
      },
    },
    {
      method: 'GET',
      pattern: /^\/iam\/v1\/projects\/([^/:]+)\/serviceAccounts\/([^/:]+)$/,
      operation: 'serviceAccounts.get',
      handle: ([, project = '', id = ''], _body, request) => {
        authenticate(request);
        const state = findAccount(project, decodeURIComponent(id));
        if (!state) throw accountNotFound(project, decodeURIComponent(id));
        return state.account;
      },
    },
    {
      method: 'DELETE',
      pattern: /^\/iam\/v1\/projects\/([^/:]+)\/serviceAccounts\/([^/:]+)$/,
      operation: 'serviceAccounts.delete',
      handle: ([, project = '', id = ''], _body, request) => {
        authenticate(request);
        const state = findAccount(project, decodeURIComponent(id));
        if (!state) throw accountNotFound(project, decodeURIComponent(id));
        deleteAccount(state);
        return {};
      },
    },
    {
      method: 'POST',
      pattern: /^\/iam\/v1\/projects\/([^/:]+)\/serviceAccounts\/([^/:]+)\/keys$/,
      operation: 'serviceAccounts.keys.create',
      handle: ([, project = '', id = ''], body, request) => {
        authenticate(request);
        const state = findAccount(project, decodeURIComponent(id));
        if (!state) throw accountNotFound(project, decodeURIComponent(id));
        const { privateKeyType = 'TYPE_GOOGLE_CREDENTIALS_FILE', keyAlgorithm = 'KEY_ALG_RSA_2048' } = (body ?? {}) as Record<string, string>;
        const type = privateKeyType === 'TYPE_UNSPECIFIED' ? 'TYPE_GOOGLE_CREDENTIALS_FILE' : privateKeyType;
        const algorithm = keyAlgorithm === 'KEY_ALG_UNSPECIFIED' ? 'KEY_ALG_RSA_2048' : keyAlgorithm;
        if (!['TYPE_GOOGLE_CREDENTIALS_FILE', 'TYPE_PKCS12_FILE'].includes(type)) {
          throw new GoogleError(400, 'INVALID_ARGUMENT', `Invalid value at 'private_key_type' (type.googleapis.com/google.iam.admin.v1.ServiceAccountPrivateKeyType), "${privateKeyType}"`);
        }
        if (type === 'TYPE_PKCS12_FILE') throw new GoogleError(400, 'INVALID_ARGUMENT', 'TYPE_PKCS12_FILE keys are not produced by this emulator.');
        if (!['KEY_ALG_RSA_1024', 'KEY_ALG_RSA_2048'].includes(algorithm)) {
          throw new GoogleError(400, 'INVALID_ARGUMENT', `Invalid value at 'key_algorithm' (type.googleapis.com/google.iam.admin.v1.ServiceAccountKeyAlgorithm), "${keyAlgorithm}"`);
        }
        if ([...keys.values()].filter((key) => key.email === state.account.email).length >= 10) {
          throw new GoogleError(400, 'FAILED_PRECONDITION', 'Precondition check failed.');
        }
        const { key, credentials } = createKey(state.account, type, algorithm);
        return { ...keyView(key), privateKeyType: type, privateKeyData: Buffer.from(credentials).toString('base64') };
      },
    },
    {
      method: 'GET',
      pattern: /^\/iam\/v1\/projects\/([^/:]+)\/serviceAccounts\/([^/:]+)\/keys$/,
      operation: 'serviceAccounts.keys.list',
      handle: ([, project = '', id = ''], _body, request) => {
        authenticate(request);
        const state = findAccount(project, decodeURIComponent(id));
        if (!state) throw accountNotFound(project, decodeURIComponent(id));
        return { keys: [...keys.values()].filter((key) => key.email === state.account.email).map(keyView) };
      },
    },
    {
      method: 'GET',
      pattern: /^\/iam\/v1\/projects\/([^/:]+)\/serviceAccounts\/([^/:]+)\/keys\/([^/:]+)$/,
      operation: 'serviceAccounts.keys.get',
      handle: ([, project = '', id = '', keyId = ''], _body, request) => {
        authenticate(request);
        const state = findAccount(project, decodeURIComponent(id));
        const key = keys.get(keyId);
        if (!state || !key || key.email !== state.account.email) throw new GoogleError(404, 'NOT_FOUND', `Service account key ${keyId} does not exist.`);
        return keyView(key);
      },
    },
    {
      method: 'DELETE',
      pattern: /^\/iam\/v1\/projects\/([^/:]+)\/serviceAccounts\/([^/:]+)\/keys\/([^/:]+)$/,
      operation: 'serviceAccounts.keys.delete',
      handle: ([, project = '', id = '', keyId = ''], _body, request) => {
        authenticate(request);
        const state = findAccount(project, decodeURIComponent(id));
        const key = keys.get(keyId);
        if (!state) throw accountNotFound(project, decodeURIComponent(id));
        if (!key || key.email !== state.account.email) throw new GoogleError(404, 'NOT_FOUND', `Service account key ${keyId} does not exist.`);
        keys.delete(keyId);
        return {};
      },
    },
    ...policyRoute(/^\/iam\/v1\/projects\/([^/:]+)\/serviceAccounts\/([^/:]+)/, 'serviceAccounts', accountResource, accountMust),
    ...policyRoute(/^\/cloudresourcemanager\/v1\/projects\/([^/:]+)/, 'projects', (match) => `projects/${match[1]}`, (match) => projectExists(match[1] ?? '')),
    ...policyRoute(/^\/cloudresourcemanager\/v1\/organizations\/([0-9]+)/, 'organizations', (match) => `organizations/${match[1]}`, () => undefined),
    ...policyRoute(/^\/cloudresourcemanager\/v2\/folders\/([0-9]+)/, 'folders', (match) => `folders/${match[1]}`, () => undefined),
    {
      method: 'GET',
      pattern: /^\/storage\/storage\/v1\/b\/([^/]+)\/iam$/,
      operation: 'buckets.getIamPolicy',
      handle: ([, bucket = ''], _body, request) => {
        authenticate(request);
        if (!buckets.has(bucket)) throw new GoogleError(404, 'NOT_FOUND', 'The specified bucket does not exist.');
        return { kind: 'storage#policy', resourceId: `projects/_/buckets/${bucket}`, ...copyPolicy(policyOf(`b/${bucket}`)) };
      },
    },
    {
      method: 'PUT',
      pattern: /^\/storage\/storage\/v1\/b\/([^/]+)\/iam$/,
      operation: 'buckets.setIamPolicy',
      handle: ([, bucket = ''], body, request) => {
        authenticate(request);
        if (!buckets.has(bucket)) throw new GoogleError(404, 'NOT_FOUND', 'The specified bucket does not exist.');
        return { kind: 'storage#policy', resourceId: `projects/_/buckets/${bucket}`, ...setPolicy(`b/${bucket}`, { policy: body }, 412) };
      },
    },
    {
      method: 'POST',
      pattern: /^\/iamcredentials\/v1\/projects\/-\/serviceAccounts\/([^/:]+):generateAccessToken$/,
      operation: 'serviceAccounts.generateAccessToken',
      handle: ([, id = ''], body, request) => {
        authenticate(request);
        const { scope, lifetime = '3600s' } = (body ?? {}) as { scope?: string[]; lifetime?: string };
        if (!Array.isArray(scope) || scope.length === 0) throw new GoogleError(400, 'INVALID_ARGUMENT', 'Scope required.');
        const seconds = /^\d+(\.\d+)?s$/.test(lifetime) ? Math.floor(Number.parseFloat(lifetime)) : Number.NaN;
        const max = options.lifetimeExtension === false ? 3600 : 43_200;
        if (!Number.isFinite(seconds) || seconds < 1 || seconds > max) {
          throw new GoogleError(400, 'INVALID_ARGUMENT', `The lifetime of the access token must be between 1 and ${max} seconds.`);
        }
        const state = findAccount('-', decodeURIComponent(id));
        if (!state) throw new GoogleError(404, 'NOT_FOUND', 'Requested entity was not found.');
        const issued = issue(state.account.email, scope, seconds, 'generateAccessToken');
        return { accessToken: issued.token, expireTime: new Date(issued.expiresAt).toISOString().replace(/\.\d+Z$/, 'Z') };
      },
    },
  ];

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
        if (planned && !planned.afterApply) throw new OAuthError(planned.status ?? 500, 'internal_failure', planned.message ?? 'injected failure');
        const result =
          operation === 'oauth2.token'
            ? await oauthToken(new URLSearchParams(raw))
            : await stsToken(isForm ? Object.fromEntries(new URLSearchParams(raw)) : (JSON.parse(raw || '{}') as Record<string, string>));
        if (planned) throw new OAuthError(planned.status ?? 500, 'internal_failure', planned.message ?? 'injected failure');
        send(200, result);
      } catch (error) {
        if (error instanceof OAuthError) send(error.code, { error: error.error, error_description: error.description });
        else send(400, { error: 'invalid_request', error_description: (error as Error).message });
      }
      return;
    }
    const route = routes.find((candidate) => candidate.method === request.method && candidate.pattern.test(parsed.pathname));
    if (!route) {
      send(404, { error: { code: 404, message: `The requested URL ${parsed.pathname} was not found on this server.`, status: 'NOT_FOUND' } });
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
      const injected = () => new GoogleError(planned?.status ?? 503, planned?.status === 409 ? 'ABORTED' : 'UNAVAILABLE', planned?.message ?? 'The service is currently unavailable.');
      if (planned && !planned.afterApply) throw injected();
      const result = route.handle(route.pattern.exec(parsed.pathname) ?? [], body, request, parsed.searchParams);
      if (planned) throw injected();
      send(200, result);
    } catch (error) {
      if (error instanceof GoogleError) send(error.code, { error: { code: error.code, message: error.message, status: error.status } });
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
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

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
      const account = accounts.get(`${accountId}@${project}.iam.gserviceaccount.com`)?.account ?? createAccount(project, accountId);
      const state = accounts.get(account.email);
      if (state) state.invisibleFor = 0;
      return { email: account.email, credentials: createKey(account, 'TYPE_GOOGLE_CREDENTIALS_FILE', 'KEY_ALG_RSA_2048').credentials };
    },
    serviceAccounts: () => [...accounts.values()].map((state) => state.account),
    serviceAccount: (email) => accounts.get(email)?.account,
    keys: (email) => [...keys.values()].filter((key) => email === undefined || key.email === email),
    policy: (resource) => copyPolicy(policyOf(resource)),
    bindingsOf(member) {
      const found: string[] = [];
      for (const [resource, policy] of policies) {
        for (const binding of policy.bindings) if (binding.members.includes(member)) found.push(`${resource} ${binding.role}`);
      }
      return found.sort();
    },
    setPolicy(resource, bindings) {
      policies.set(resource, { version: 1, etag: newEtag(), bindings: bindings.map((binding) => ({ role: binding.role, members: [...binding.members] })) });
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
export const privateKeyOf = (credentials: string): KeyObject => createPrivateKey((JSON.parse(credentials) as { private_key: string }).private_key);
export const publicKeyOf = (credentials: string): KeyObject => createPublicKey(privateKeyOf(credentials));
