import type { Route } from './model.ts';
import { accountIdPattern, GoogleError } from './model.ts';
import type { GoogleState } from './state.ts';

/** Service accounts and their keys: create, get, delete; keys create, list, get, delete. */
export function serviceAccountRoutes(s: GoogleState): Route[] {
  const {
    projects,
    keys,
    findAccount,
    accountNotFound,
    createAccount,
    createKey,
    keyView,
    deleteAccount,
    authenticate,
  } = s;
  return [
    {
      method: 'POST',
      pattern: /^\/iam\/v1\/projects\/([^/:]+)\/serviceAccounts$/,
      operation: 'serviceAccounts.create',
      handle: ([, project = ''], body, request) => {
        authenticate(request);
        const { accountId, serviceAccount } = (body ?? {}) as {
          accountId?: string;
          serviceAccount?: { displayName?: string; description?: string };
        };
        if (!accountId || accountId.length < 6 || accountId.length > 30 || !accountIdPattern.test(accountId)) {
          throw new GoogleError(
            400,
            'INVALID_ARGUMENT',
            'Account name must be 6-30 characters long and match the regular expression [a-z]([-a-z0-9]*[a-z0-9]).',
          );
        }
        if ((serviceAccount?.displayName ?? '').length > 100)
          throw new GoogleError(400, 'INVALID_ARGUMENT', 'Display name must be at most 100 characters.');
        if ((serviceAccount?.description ?? '').length > 256)
          throw new GoogleError(400, 'INVALID_ARGUMENT', 'Description must be at most 256 characters.');
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
        const { privateKeyType = 'TYPE_GOOGLE_CREDENTIALS_FILE', keyAlgorithm = 'KEY_ALG_RSA_2048' } = (body ??
          {}) as Record<string, string>;
        const type = privateKeyType === 'TYPE_UNSPECIFIED' ? 'TYPE_GOOGLE_CREDENTIALS_FILE' : privateKeyType;
        const algorithm = keyAlgorithm === 'KEY_ALG_UNSPECIFIED' ? 'KEY_ALG_RSA_2048' : keyAlgorithm;
        if (!['TYPE_GOOGLE_CREDENTIALS_FILE', 'TYPE_PKCS12_FILE'].includes(type)) {
          throw new GoogleError(
            400,
            'INVALID_ARGUMENT',
            `Invalid value at 'private_key_type' (type.googleapis.com/google.iam.admin.v1.ServiceAccountPrivateKeyType), "${privateKeyType}"`,
          );
        }
        if (type === 'TYPE_PKCS12_FILE')
          throw new GoogleError(400, 'INVALID_ARGUMENT', 'TYPE_PKCS12_FILE keys are not produced by this emulator.');
        if (!['KEY_ALG_RSA_1024', 'KEY_ALG_RSA_2048'].includes(algorithm)) {
          throw new GoogleError(
            400,
            'INVALID_ARGUMENT',
            `Invalid value at 'key_algorithm' (type.googleapis.com/google.iam.admin.v1.ServiceAccountKeyAlgorithm), "${keyAlgorithm}"`,
          );
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
        if (!state || !key || key.email !== state.account.email)
          throw new GoogleError(404, 'NOT_FOUND', `Service account key ${keyId} does not exist.`);
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
        if (!key || key.email !== state.account.email)
          throw new GoogleError(404, 'NOT_FOUND', `Service account key ${keyId} does not exist.`);
        keys.delete(keyId);
        return {};
      },
    },
  ];
}
