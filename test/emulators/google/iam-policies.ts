import { type AccountState, GoogleError, type Route } from './model.ts';
import type { GoogleState } from './state.ts';

/** IAM policies (`:getIamPolicy`, `:setIamPolicy`) of service accounts, projects, organizations, folders and buckets. */
export function iamPolicyRoutes(s: GoogleState): Route[] {
  const { projects, buckets, policyOf, copyPolicy, findAccount, accountNotFound, setPolicy, authenticate } = s;
  const policyRoute = (
    prefix: RegExp,
    operation: string,
    resourceOf: (match: string[]) => string,
    exists: (match: string[]) => void,
  ): Route[] => [
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
    if (!findAccount(match[1] ?? '', decodeURIComponent(match[2] ?? '')))
      throw accountNotFound(match[1] ?? '', decodeURIComponent(match[2] ?? ''));
  };
  const accountResource = (match: string[]) => {
    const state = findAccount(match[1] ?? '', decodeURIComponent(match[2] ?? '')) as AccountState;
    return `projects/${state.account.projectId}/serviceAccounts/${state.account.email}`;
  };

  return [
    ...policyRoute(
      /^\/iam\/v1\/projects\/([^/:]+)\/serviceAccounts\/([^/:]+)/,
      'serviceAccounts',
      accountResource,
      accountMust,
    ),
    ...policyRoute(
      /^\/cloudresourcemanager\/v1\/projects\/([^/:]+)/,
      'projects',
      (match) => `projects/${match[1]}`,
      (match) => projectExists(match[1] ?? ''),
    ),
    ...policyRoute(
      /^\/cloudresourcemanager\/v1\/organizations\/([0-9]+)/,
      'organizations',
      (match) => `organizations/${match[1]}`,
      () => undefined,
    ),
    ...policyRoute(
      /^\/cloudresourcemanager\/v2\/folders\/([0-9]+)/,
      'folders',
      (match) => `folders/${match[1]}`,
      () => undefined,
    ),
    {
      method: 'GET',
      pattern: /^\/storage\/storage\/v1\/b\/([^/]+)\/iam$/,
      operation: 'buckets.getIamPolicy',
      handle: ([, bucket = ''], _body, request) => {
        authenticate(request);
        if (!buckets.has(bucket)) throw new GoogleError(404, 'NOT_FOUND', 'The specified bucket does not exist.');
        return {
          kind: 'storage#policy',
          resourceId: `projects/_/buckets/${bucket}`,
          ...copyPolicy(policyOf(`b/${bucket}`)),
        };
      },
    },
    {
      method: 'PUT',
      pattern: /^\/storage\/storage\/v1\/b\/([^/]+)\/iam$/,
      operation: 'buckets.setIamPolicy',
      handle: ([, bucket = ''], body, request) => {
        authenticate(request);
        if (!buckets.has(bucket)) throw new GoogleError(404, 'NOT_FOUND', 'The specified bucket does not exist.');
        return {
          kind: 'storage#policy',
          resourceId: `projects/_/buckets/${bucket}`,
          ...setPolicy(`b/${bucket}`, { policy: body }, 412),
        };
      },
    },
  ];
}
