import { generateKeyPairSync, randomBytes, randomInt } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type {
  FailureOptions,
  GoogleEmulatorOptions,
  IssuedToken,
  Policy,
  ServiceAccount,
  ServiceAccountKey,
  WorkloadIdentityProvider,
} from '../google.ts';
import { type AccountState, cloudPlatformScope, GoogleError, memberPattern, rolePattern } from './model.ts';

/**
 * The Google emulator's state (projects, buckets, service accounts, keys, IAM policies, issued tokens, workload identity
 * providers, planned failures, the calls made) and the helpers its endpoints share.
 */
export function createGoogleState(options: GoogleEmulatorOptions) {
  /** The server's base URL, known once it listens. */
  const s = { url: '' };
  const now = options.now ?? Date.now;
  const projects = new Set<string>();
  const buckets = new Set<string>();
  const accounts = new Map<string, AccountState>();
  const keys = new Map<string, ServiceAccountKey>();
  const policies = new Map<string, Policy>();
  const tokens = new Map<string, IssuedToken>();
  const providers = new Map<string, WorkloadIdentityProvider>();
  /** The users `gcloud auth application-default login` would have signed in, by refresh token. */
  const authorizedUsers = new Map<string, { email: string; clientId: string; clientSecret: string }>();
  const failures = new Map<string, Required<Omit<FailureOptions, 'message'>> & { message?: string }>();
  const calls: string[] = [];

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
    if (accounts.has(email))
      throw new GoogleError(
        409,
        'ALREADY_EXISTS',
        `Service account ${accountId} already exists within project projects/${project}.`,
      );
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
      token_uri: `${s.url}/oauth2/token`,
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
    if (!policy || typeof policy !== 'object')
      throw new GoogleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received. Missing "policy".');
    const bindings = policy.bindings ?? [];
    if (!Array.isArray(bindings))
      throw new GoogleError(
        400,
        'INVALID_ARGUMENT',
        'Invalid JSON payload received. "policy.bindings" must be a list.',
      );
    for (const binding of bindings) {
      if (typeof binding?.role !== 'string' || !rolePattern.test(binding.role)) {
        throw new GoogleError(
          400,
          'INVALID_ARGUMENT',
          `Role (${binding?.role}) does not exist in the resource's hierarchy.`,
        );
      }
      for (const member of binding.members ?? []) {
        if (!memberPattern.test(member)) throw new GoogleError(400, 'INVALID_ARGUMENT', `Invalid member: ${member}.`);
        if (member.startsWith('serviceAccount:')) {
          const state = accounts.get(member.slice('serviceAccount:'.length));
          if (!state || state.invisibleFor > 0) {
            if (state) state.invisibleFor--;
            throw new GoogleError(
              400,
              'INVALID_ARGUMENT',
              `Service account ${member.slice('serviceAccount:'.length)} does not exist.`,
            );
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
        : new GoogleError(
            409,
            'ABORTED',
            'There were concurrent policy changes. Please retry the whole read-modify-write with exponential backoff.',
          );
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
    if (
      !token.scopes.includes(cloudPlatformScope) &&
      !token.scopes.some((scope) => scope.startsWith('https://www.googleapis.com/auth/iam'))
    ) {
      throw new GoogleError(403, 'PERMISSION_DENIED', 'Request had insufficient authentication scopes.');
    }
    return token;
  }

  function issue(
    principal: string,
    scopes: string[],
    lifetimeSeconds: number,
    via: IssuedToken['via'],
    keyId?: string,
  ): IssuedToken {
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

  return Object.assign(s, {
    options,
    now,
    projects,
    buckets,
    accounts,
    keys,
    policies,
    tokens,
    providers,
    authorizedUsers,
    failures,
    calls,
    newEtag,
    policyOf,
    copyPolicy,
    findAccount,
    accountNotFound,
    createAccount,
    createKey,
    keyView,
    deleteAccount,
    checkPolicy,
    setPolicy,
    authenticate,
    issue,
    failure,
  });
}

export type GoogleState = ReturnType<typeof createGoogleState>;
