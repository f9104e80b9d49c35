import { badRequest } from '../../../lib/errors.ts';
import { HclSyntaxError, keyName, type ObjectList, parseHclV1 } from '../../../lib/hcl-v1.ts';
import { decodeSlice, decodeString, fieldSources } from '../../../lib/hcl-v1-decode.ts';
import { GoogleApiError, type GoogleClient, sleep } from './google-client.ts';

/**
 * Bindings: which roles the engine's service account gets on which resources. Given as HCL
 * (`resource "<name>" { roles = [...] }`) or JSON (`{"resource": {"<name>": {"roles": [...]}}}`), raw or
 * base64; stored and shown as a map resource -> sorted roles.
 */
export type Bindings = Record<string, string[]>;

const rolePattern =
  /^(roles\/[A-Za-z0-9_.]+|projects\/[a-z][-a-z0-9]{4,28}[a-z0-9]\/roles\/[A-Za-z0-9_.]{3,64}|organizations\/[0-9]+\/roles\/[A-Za-z0-9_.]{3,64})$/;

export function parseBindings(input: string): Bindings {
  const text = decodeMaybeBase64(input);
  if (text.trim() === '') throw badRequest('invalid "bindings": empty');
  const entries = fromDocument(text);
  const bindings: Bindings = {};
  for (const { resource, roles, line } of entries) {
    const where = line ? ` (line ${line})` : '';
    resourceApi(resource, where);
    if (roles.length === 0) throw badRequest(`invalid "bindings": resource "${resource}"${where} has no roles`);
    for (const role of roles) {
      if (!rolePattern.test(role)) {
        throw badRequest(
          `invalid "bindings": role "${role}" of resource "${resource}"${where} is not a role name (roles/X, projects/P/roles/X or organizations/O/roles/X)`,
        );
      }
    }
    bindings[resource] = [...new Set([...(bindings[resource] ?? []), ...roles])].sort();
  }
  return bindings;
}

function decodeMaybeBase64(text: string): string {
  const compact = text.trim();
  if (!/^[A-Za-z0-9+/=\s]+$/.test(compact) || compact.length % 4 === 1) return text;
  const decoded = Buffer.from(compact, 'base64').toString('utf8');
  return /resource/.test(decoded) && !decoded.includes('\uFFFD') ? decoded : text;
}

interface Entry {
  resource: string;
  roles: string[];
  line?: number;
}

/** HCL or JSON, parsed with hcl v1 (as the GCP plugin does): `resource "<name>" { roles = [...] }` items. */
function fromDocument(text: string): Entry[] {
  let root: ObjectList;
  try {
    root = parseHclV1(text);
  } catch (error) {
    if (!(error instanceof HclSyntaxError)) throw error;
    const line = error.line || text.split('\n').length;
    const column = error.line ? `, column ${error.column}` : ' (end of input)';
    throw badRequest(`invalid "bindings": line ${line}${column}: ${error.message.replace(/^At \d+:\d+: /, '')}`);
  }
  const entries: Entry[] = [];
  for (const item of root.items) {
    const [type, label, ...extra] = item.keys;
    const line = (label ?? type)?.line;
    const at = line ? ` (line ${line})` : '';
    if (type && !label && item.assign && keyName(type) !== 'resource') {
      throw badRequest(`invalid "bindings": unexpected attribute "${keyName(type)}"${at}; expected resource blocks`);
    }
    if (!type || keyName(type) !== 'resource' || !label || extra.length > 0 || item.value.kind !== 'object') {
      throw badRequest(`invalid "bindings": expected a block 'resource "<name>" { roles = [...] }'${at}`);
    }
    const resource = keyName(label);
    entries.push({ resource, roles: rolesOf(item.value.list, resource, line), line });
  }
  if (entries.length === 0) throw badRequest('invalid "bindings": no resource blocks');
  return entries;
}

function rolesOf(body: ObjectList, resource: string, line?: number): string[] {
  const sources = fieldSources(body, 'roles');
  const refuse = () =>
    badRequest(
      `invalid "bindings": resource "${resource}"${line ? ` (line ${line})` : ''} needs "roles" as a list of strings`,
    );
  if (sources.length !== 1) throw refuse();
  try {
    return decodeSlice(sources[0] as (typeof sources)[number], 'roles', decodeString);
  } catch (error) {
    if (error instanceof HclSyntaxError) throw refuse();
    throw error;
  }
}

/** Where a resource's IAM policy lives. */
export interface ResourceApi {
  kind: 'post' | 'storage';
  /** URL without the `:getIamPolicy` suffix (post) or the `/iam` URL (storage), relative to the API's base. */
  api: 'resourceManager' | 'iam' | 'storage';
  path: string;
}

const resourceForms: Array<[RegExp, (match: RegExpExecArray) => ResourceApi]> = [
  [
    /^(?:\/\/cloudresourcemanager\.googleapis\.com\/|https:\/\/cloudresourcemanager\.googleapis\.com\/v1\/)projects\/([^/]+)$/,
    (m) => ({ kind: 'post', api: 'resourceManager', path: `/v1/projects/${m[1]}` }),
  ],
  [
    /^(?:\/\/cloudresourcemanager\.googleapis\.com\/|https:\/\/cloudresourcemanager\.googleapis\.com\/v1\/)organizations\/([0-9]+)$/,
    (m) => ({ kind: 'post', api: 'resourceManager', path: `/v1/organizations/${m[1]}` }),
  ],
  [
    /^(?:\/\/cloudresourcemanager\.googleapis\.com\/|https:\/\/cloudresourcemanager\.googleapis\.com\/v2\/)folders\/([0-9]+)$/,
    (m) => ({ kind: 'post', api: 'resourceManager', path: `/v2/folders/${m[1]}` }),
  ],
  [
    /^(?:\/\/iam\.googleapis\.com\/|https:\/\/iam\.googleapis\.com\/v1\/)projects\/([^/]+)\/serviceAccounts\/([^/]+)$/,
    (m) => ({ kind: 'post', api: 'iam', path: `/v1/projects/${m[1]}/serviceAccounts/${m[2]}` }),
  ],
  [
    /^(?:\/\/storage\.googleapis\.com\/(?:projects\/_\/)?buckets\/|https:\/\/www\.googleapis\.com\/storage\/v1\/b\/)([^/]+)$/,
    (m) => ({ kind: 'storage', api: 'storage', path: `/storage/v1/b/${m[1]}/iam` }),
  ],
];

/** The policy endpoint of a resource name, or a 400 naming it. */
export function resourceApi(resource: string, where = ''): ResourceApi {
  for (const [pattern, build] of resourceForms) {
    const match = pattern.exec(resource);
    if (match) return build(match);
  }
  throw badRequest(
    `invalid "bindings": resource "${resource}"${where} is not a supported resource name (//cloudresourcemanager.googleapis.com/projects/P, …/organizations/O, …/folders/F, //iam.googleapis.com/projects/P/serviceAccounts/E, //storage.googleapis.com/buckets/B, or their self-links)`,
  );
}

interface Policy {
  etag?: string;
  version?: number;
  bindings?: Array<{ role: string; members: string[]; condition?: unknown }>;
}

/**
 * Adds or removes `member` in `roles` of one resource's policy: read-modify-write with the etag, retried on
 * a concurrent change (409/412) and, when adding, on a new account that IAM does not know yet.
 */
export async function changeMember(
  google: GoogleClient,
  resource: string,
  member: string,
  add: string[],
  remove: string[],
): Promise<void> {
  const target = resourceApi(resource);
  const base = google.endpoints[target.api];
  const attempts = 8;
  for (let attempt = 1; ; attempt++) {
    try {
      const policy =
        target.kind === 'storage'
          ? await google.call<Policy>('GET', `${base}${target.path}`)
          : await google.call<Policy>('POST', `${base}${target.path}:getIamPolicy`, {
              options: { requestedPolicyVersion: 3 },
            });
      const bindings = (policy.bindings ?? []).map((binding) => ({ ...binding, members: [...binding.members] }));
      let changed = false;
      for (const role of remove) {
        for (const binding of bindings) {
          if (binding.role === role && !binding.condition && binding.members.includes(member)) {
            binding.members = binding.members.filter((entry) => entry !== member);
            changed = true;
          }
        }
      }
      for (const role of add) {
        const binding = bindings.find((entry) => entry.role === role && !entry.condition);
        if (binding?.members.includes(member)) continue;
        if (binding) binding.members.push(member);
        else bindings.push({ role, members: [member] });
        changed = true;
      }
      if (!changed) return;
      const next = { ...policy, bindings: bindings.filter((binding) => binding.members.length > 0) };
      if (target.kind === 'storage') await google.call('PUT', `${base}${target.path}`, next);
      else await google.call('POST', `${base}${target.path}:setIamPolicy`, { policy: next });
      return;
    } catch (error) {
      const retryable =
        error instanceof GoogleApiError &&
        (error.httpStatus === 409 ||
          error.httpStatus === 412 ||
          error.httpStatus === 429 ||
          error.httpStatus >= 500 ||
          (add.length > 0 && error.httpStatus === 400 && /does not exist/i.test(error.message)));
      if (!retryable || attempt >= attempts) throw error;
      await sleep(google.endpoints.retryBaseMs * 2 ** Math.min(attempt - 1, 5));
    }
  }
}

/** Grants every binding to `member`. */
export async function grantBindings(google: GoogleClient, member: string, bindings: Bindings): Promise<void> {
  for (const [resource, roles] of Object.entries(bindings)) await changeMember(google, resource, member, roles, []);
}

/** Takes `member` out of the given bindings; a resource that no longer exists has nothing to remove. */
export async function revokeBindings(google: GoogleClient, member: string, bindings: Bindings): Promise<void> {
  for (const [resource, roles] of Object.entries(bindings)) {
    try {
      await changeMember(google, resource, member, [], roles);
    } catch (error) {
      if (!(error instanceof GoogleApiError && error.httpStatus === 404)) throw error;
    }
  }
}

/** Roles in `from` that are not in `minus`, per resource. */
export function subtractBindings(from: Bindings, minus: Bindings): Bindings {
  const result: Bindings = {};
  for (const [resource, roles] of Object.entries(from)) {
    const left = roles.filter((role) => !(minus[resource] ?? []).includes(role));
    if (left.length > 0) result[resource] = left;
  }
  return result;
}

export const sameBindings = (a: Bindings, b: Bindings) =>
  JSON.stringify(Object.entries(a).sort(([x], [y]) => x.localeCompare(y))) ===
  JSON.stringify(Object.entries(b).sort(([x], [y]) => x.localeCompare(y)));
